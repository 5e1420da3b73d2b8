"""Mixtral's sparse mixture of experts: a router picks, for each token, k of E gated (SwiGLU) feed-forward
networks, and the token's output is their weighted sum.

    router logits  r = x W_router                          [T, E]
    probabilities  p = softmax(r)                          [T, E]  (in float32, as transformers computes it)
    chosen         S = the k experts of largest p           [T, k]  (torch.topk: ties go to the lower index)
    weights        w_e = p_e / Σ_{j ∈ S} p_j  for e ∈ S      [T, k]  (renormalised over the chosen ones)
    output         y = Σ_{e ∈ S} w_e · down_e(act(gate_e(x)) ⊙ up_e(x))

as transformers' MixtralTopKRouter and MixtralExperts do (softmax, then topk, then divide by the chosen sum).
Each expert runs only on the tokens sent to it. Recorded under names.ffn_entry(layer, part) for the parts
names.MOE_FFN_PARTS.

Shapes: B batch, T positions, d = d_model, E experts, k = experts per token.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.activations import ACTIVATION_FUNCTIONS
from attnlab.engine.config import ModelConfig
from attnlab.engine.recorder import Recorder


class Expert(nn.Module):
    """One expert: down(act(gate(x)) ⊙ up(x)) (Mixtral's w1 = gate, w3 = up, w2 = down)."""

    def __init__(self, d_model: int, d_ff: int, bias: bool, activation: str):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=bias)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATION_FUNCTIONS[activation]

    def forward(self, h: Tensor) -> Tensor:
        """h [n, d] -> [n, d]"""
        return self.down(self.act(self.gate(h)) * self.up(h))  # [n, d_ff] inside


def route(logits: Tensor, k: int) -> tuple[Tensor, Tensor, Tensor]:
    """router logits [..., E] -> (probabilities [..., E] float32, chosen experts [..., k] int64, their weights
    renormalised over the chosen [..., k] float32)."""
    probs = torch.softmax(logits.float(), dim=-1)  # [..., E]
    top, chosen = torch.topk(probs, k, dim=-1)  # [..., k]
    return probs, chosen, top / top.sum(dim=-1, keepdim=True)


class MoEFeedForward(nn.Module):
    """The sparse mixture-of-experts FFN of a layer: a router and n_experts gated experts."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        bias = cfg.has_bias("ffn")
        experts = (Expert(cfg.d_model, cfg.d_ff, bias, cfg.activation) for _ in range(cfg.n_experts))
        self.experts = nn.ModuleList(experts)
        self.k = cfg.experts_per_token

    def forward(self, x: Tensor, rec: Recorder, layer_name: str) -> Tensor:
        """x [B, T, d] -> [B, T, d]; records the router's logits, probabilities, choices, weights and the output."""
        logits = self.router(x)  # [B, T, E]
        probs, chosen, weights = route(logits, self.k)  # [B, T, E], [B, T, k], [B, T, k]
        out = torch.zeros_like(x)  # [B, T, d]
        for e, expert in enumerate(self.experts):
            sent = chosen == e  # [B, T, k]: at most one True per token
            b, t = sent.any(dim=-1).nonzero(as_tuple=True)  # the tokens this expert serves: [n] each
            if b.numel() == 0:
                continue
            h = x[b, t]  # [n, d]
            y = expert(h)  # [n, d]
            w = (weights * sent).sum(dim=-1)[b, t]  # [n]: this expert's weight for each of its tokens
            out.index_put_((b, t), (y * w[:, None]).to(out.dtype), accumulate=True)
        if rec.enabled:
            parts = names.entries(names.ffn(layer_name), names.MOE_FFN_PARTS)
            rec.add(zip(parts, (logits, probs, chosen, weights, out), strict=True))
        return out
