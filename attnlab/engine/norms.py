"""The two normalisations: LayerNorm (mean and variance) and RMSNorm (root mean square only)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.trace import Recorder


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension (biased variance)."""

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None
        self.eps = eps

    def forward(self, x: Tensor, rec: Recorder, name: str) -> Tensor:
        """x [B, T, d] -> [B, T, d]; records its input, statistics and output under `name` ('enc.0.norm1')."""
        return layer_norm(x, self.weight, self.bias, self.eps, rec, name)


def layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float, rec: Recorder, name: str
) -> torch.Tensor:
    """x [B, T, d] -> [B, T, d]: LayerNorm with gamma `weight` and beta `bias` (None: 1 and 0), recorded under
    `name` like every trained LayerNorm (input, mean, var, output)."""
    if not rec.enabled:
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)
    # one fused pass gives the output [B, T, d] and the statistics it used: mean and 1/sqrt(var + eps),
    # each [B, T, 1]
    out, mean, rstd = torch.native_layer_norm(x, x.shape[-1:], weight, bias, eps)
    var = rstd.pow(-2).sub_(eps).clamp_min_(0.0).squeeze(-1) if rec.eager else None  # [B, T], biased
    x_name = names.norm_entry(name, "in")
    rec(x_name, x)  # the statistics are derived from it on read, by the same kernel
    rec.derived(names.norm_entry(name, "mean"), mean.squeeze(-1), "norm_mean", (x_name,), eps)
    rec.derived(names.norm_entry(name, "var"), var, "norm_var", (x_name,), eps)
    rec(names.norm_entry(name, "out"), out)
    return out


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * gamma over the last dimension: no centring, no bias (Llama, Qwen2)."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: Tensor, rec: Recorder, name: str) -> Tensor:
        """x [B, T, d] -> [B, T, d]; records its input, the RMS sqrt(mean(x^2) + eps) per token and output."""
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # [B, T, 1]
        out = self.weight * (x * rstd)  # [B, T, d]
        if rec.enabled:
            rec(names.norm_entry(name, "in"), x)
            rec(names.norm_entry(name, "rms"), rstd.reciprocal().squeeze(-1))  # [B, T]
            rec(names.norm_entry(name, "out"), out)
        return out


def make_norm(kind: str, d_model: int, eps: float, bias: bool = True) -> LayerNorm | RMSNorm:
    """The norm a ModelConfig asks for: kind "layernorm" or "rmsnorm"."""
    return RMSNorm(d_model, eps) if kind == "rmsnorm" else LayerNorm(d_model, eps, bias)
