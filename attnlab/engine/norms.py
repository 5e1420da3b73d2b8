"""The two normalisations: LayerNorm (mean and variance) and RMSNorm (root mean square only)."""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.derived import Derived
from attnlab.engine.recorder import Recorder


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
    by_mean, by_var = norm_rules(name, eps)
    if rec.eager:  # the statistics as the forward computed them, [B, T]; the variance is the biased one
        mean_value, var_value = mean.squeeze(-1), rstd.pow(-2).sub_(eps).clamp_min_(0.0).squeeze(-1)
        stats: tuple[Tensor | Derived, Tensor | Derived] = (mean_value, var_value)
    else:  # derived from the input on read, by the same kernel
        stats = (by_mean, by_var)
    x_name, mean_name, var_name, out_name = names.entries(name, names.NORM_STATS)
    rec.add(((x_name, x), (mean_name, stats[0]), (var_name, stats[1]), (out_name, out)))
    return out


@lru_cache(maxsize=4096)
def norm_rules(name: str, eps: float) -> tuple[Derived, Derived]:
    """How a LayerNorm's mean and variance are derived from its input (engine/derived.py), built once."""
    x_name = names.norm_entry(name, "in")
    return Derived("norm_mean", (x_name,), (eps,)), Derived("norm_var", (x_name,), (eps,))


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * gamma over the last dimension: no centring, no bias (Llama, Qwen2)."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.eps = eps

    def forward(self, x: Tensor, rec: Recorder, name: str) -> Tensor:
        """x [B, T, d] -> [B, T, d]; records its input, the RMS sqrt(mean(x^2) + eps) per token and output."""
        wide = x.float()  # [B, T, d]: in float32 whatever the weights' precision, as transformers' RMSNorm does
        rstd = torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + self.eps)  # [B, T, 1]
        out = self.weight * (wide * rstd).to(x.dtype)  # [B, T, d]
        if rec.enabled:
            x_name, rms_name, out_name = names.entries(name, names.RMS_STATS)
            rec.add(((x_name, x), (rms_name, rstd.reciprocal().squeeze(-1)), (out_name, out)))  # rms [B, T]
        return out


def make_norm(kind: str, d_model: int, eps: float, bias: bool = True) -> LayerNorm | RMSNorm:
    """The norm a ModelConfig asks for: kind "layernorm" or "rmsnorm"."""
    return RMSNorm(d_model, eps) if kind == "rmsnorm" else LayerNorm(d_model, eps, bias)
