"""Position-wise feed-forward networks: plain (act(x W_1) W_2) and gated (SwiGLU: down(act(gate(x)) * up(x))),
and `make_ffn`, the one a ModelConfig asks for (Mixtral's mixture of experts: moe.py). The activations are
activations.py's (ACTIVATION_FUNCTIONS is re-exported here, where it lived before)."""

from __future__ import annotations

from functools import lru_cache

from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.activations import ACTIVATION_FUNCTIONS
from attnlab.engine.config import ModelConfig
from attnlab.engine.derived import Derived
from attnlab.engine.moe import MoEFeedForward
from attnlab.engine.recorder import Recorder

__all__ = ["ACTIVATION_FUNCTIONS", "FeedForward", "GatedFeedForward", "activation_rule", "make_ffn"]


class FeedForward(nn.Module):
    """FFN(x) = act(x W_1 + b_1) W_2 + b_2, applied to each position on its own."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool = True):
        super().__init__()
        self.lin1 = nn.Linear(d_model, d_ff, bias=bias)
        self.lin2 = nn.Linear(d_ff, d_model, bias=bias)
        self.activation = activation
        self.act = ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: Tensor, rec: Recorder, layer_name: str) -> Tensor:
        """x [B, T, d] -> [B, T, d]; records under names.ffn_entry(layer_name, ...); `hidden` is derived on read
        from `pre` (engine/derived.py)."""
        pre = self.lin1(x)  # [B, T, d_ff]
        hidden = self.act(pre)  # [B, T, d_ff]
        out = self.lin2(hidden)  # [B, T, d]
        if rec.enabled:
            pre_name, hidden_name, out_name = names.entries(names.ffn(layer_name), names.FFN_PARTS)
            by_activation = activation_rule(pre_name, self.activation)
            rec.add(((pre_name, pre), (hidden_name, rec.rule(hidden, by_activation)), (out_name, out)))
        return out


@lru_cache(maxsize=4096)
def activation_rule(pre_name: str, activation: str) -> Derived:
    """How an FFN's hidden activations are derived from its pre-activations (engine/derived.py), built once."""
    return Derived("activation", (pre_name,), (activation,))


class GatedFeedForward(nn.Module):
    """FFN(x) = down(act(gate(x)) * up(x)): the gate decides, per hidden unit, how much of up(x) passes."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool = False):
        super().__init__()
        self.gate = nn.Linear(d_model, d_ff, bias=bias)
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATION_FUNCTIONS[activation]

    def forward(self, x: Tensor, rec: Recorder, layer_name: str) -> Tensor:
        """x [B, T, d] -> [B, T, d]; records gate, up, hidden and out under names.ffn_entry(layer_name, ...)."""
        gate = self.gate(x)  # [B, T, d_ff]
        up = self.up(x)  # [B, T, d_ff]
        hidden = self.act(gate) * up  # [B, T, d_ff]
        out = self.down(hidden)  # [B, T, d]
        if rec.enabled:
            gate_name, up_name, hidden_name, out_name = names.entries(names.ffn(layer_name), names.GATED_FFN_PARTS)
            rec.add(((gate_name, gate), (up_name, up), (hidden_name, hidden), (out_name, out)))
        return out


def make_ffn(cfg: ModelConfig) -> FeedForward | GatedFeedForward | MoEFeedForward:
    """The feed-forward network a ModelConfig asks for."""
    if cfg.n_experts:  # Mixtral's sparse mixture of experts
        return MoEFeedForward(cfg)
    kind = GatedFeedForward if cfg.ffn == "gated" else FeedForward
    return kind(cfg.d_model, cfg.d_ff, cfg.activation, cfg.has_bias("ffn"))
