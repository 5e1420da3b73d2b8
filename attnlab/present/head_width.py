"""What the attention pages say about the heads' width: d_k = d_model / H, or, for a model whose
config sets head_dim (Qwen3, Gemma, Mistral-Nemo), d_k = head_dim with H·d_k ≠ d_model: W_Q maps d_model to
H·d_k, W_K and W_V to H_kv·d_k, and W_O maps the H·d_k-wide concatenation back to d_model. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.present.explain_page import DK, DM

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig


def own_width(config: ModelConfig) -> bool:
    """Whether this model's heads are not d_model wide together (head_dim set: H·d_k ≠ d_model)."""
    return config.attn_width != config.d_model


def dk_text(config: ModelConfig, heads: int, dk: int) -> str:
    """'d_k = d_model / H = 8', or with head_dim: 'd_k = head_dim = 16 (H·d_k = 64, not d_model = 32)', or for
    a re-split of those heads 'd_k = 64 / H = 32 (…)'."""
    if not own_width(config):
        return f"{DK} = {DM} / H = {dk}"
    width = f"H·{DK} = {config.n_heads}·{config.head_dim} = {config.attn_width}, not {DM} = {config.d_model}"
    if heads == config.n_heads:
        return f"{DK} = head_dim = {dk} ({width})"
    return f"{DK} = {config.attn_width} / H = {dk} (the trained heads' {width})"


def projections_text(config: ModelConfig) -> str:
    """The Q, K, V page's sentence on the three matrices, with their sizes when they are not d × d."""
    if not own_width(config):
        return (
            "Three learned d × d matrices turn every token vector into a query (what it looks "
            "for), a key (what it can be matched on) and a value (what it hands over)."
        )
    d, kv = config.d_model, config.kv_heads * config.d_head
    return (
        f"Three learned matrices turn every token vector into a query (what it looks for: W<sub>Q</sub> is "
        f"{d} × {config.attn_width}, H·{DK}), a key (what it can be matched on) and a value (what it hands over: "
        f"W<sub>K</sub> and W<sub>V</sub> are {d} × {kv}, H<sub>kv</sub>·{DK}). This model sets head_dim, so "
        f"the heads together are wider or narrower than {DM} = {d}."
    )


def concat_text(h: int, dk: int, d_model: int) -> str:
    """The concatenation page's sentence: h heads of dk side by side (d_model again, or H·d_k of their own)."""
    width = h * dk
    placed = f"The {h} head outputs of {dk} numbers are placed side by side, giving each token {h} × {dk} = {width}"
    if width == d_model:
        return f"{placed} numbers again."
    return (
        f"{placed} numbers: not {DM} = {d_model}, since this model's heads have a head_dim of their own; W<sub>O</sub> "
        f"maps the {width} back to {d_model}."
    )


def out_projection_text(width: int, d_model: int) -> str:
    """The W_O page's sentence: d × d, or H·d_k × d_model."""
    if width == d_model:
        return (
            f"The d × d matrix W<sub>O</sub> ({width} × {width}) mixes what the heads found into one vector per token."
        )
    return (
        f"The H·{DK} × {DM} matrix W<sub>O</sub> ({width} × {d_model}) mixes what the heads found into one vector "
        f"per token, {d_model} wide again."
    )


def head_width_sentence(config: ModelConfig, heads: int) -> str:
    """For the grouped-query Q, K, V page: the matrices' sizes and d_k of a model that sets head_dim ('' else)."""
    if not own_width(config):
        return ""
    dk = config.attn_width // heads
    return f"{projections_text(config)} Each head has {dk_text(config, heads, dk)} numbers."
