"""The ends of the model: token ids -> input vectors (embedding, token type, positions, embedding norm) and
final hidden states -> logits (optional output head, tied or separate projection, optional logit bias)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.encoder_parts import ReplacedHead, add_projection, project_embedding
from attnlab.engine.ffn import ACTIVATION_FUNCTIONS
from attnlab.engine.norms import make_norm
from attnlab.engine.trace import Recorder

if TYPE_CHECKING:  # model.py imports this module
    from attnlab.engine.context import RunContext
    from attnlab.engine.model import Transformer


def embed_tokens(model: Transformer, ids: Tensor, side: str, ctx: RunContext) -> Tensor:
    """ids [B, T] -> input [B, T, d]: token embedding (x sqrt(d) if configured) + token type (0, or the
    segments in ctx.token_types) + positional encoding, then the embedding norm if the model has one. `model`
    is the Transformer (its tables)."""
    cfg: ModelConfig = model.config
    table = model.src_embed if side == "src" else model.tgt_embed
    x = table(ids)  # [B, T, d]
    if cfg.scale_embedding:
        x = x * math.sqrt(cfg.d_model)
    ctx.rec(names.side_entry(side, "embed"), x)
    T = ids.shape[1]
    type_table = getattr(model, f"{side}_type_embed", None)
    if type_table is not None:
        types = ctx.token_types.get(side)  # [B, T]: a sentence pair's segments; absent: one sentence, type 0
        if types is None:
            token_type = type_table.weight[0].expand(T, -1)  # [T, d]
        else:
            token_type = type_table(types)  # [B, T, d]
        ctx.rec(names.side_entry(side, names.TYPE), token_type, batched=types is not None)
        x = x + token_type
    if ctx.options.positional and cfg.adds_position_table:
        if cfg.positional == "sinusoidal":
            pos = model.sinusoid[:T]  # [T, d]
        else:
            pos = getattr(model, f"{side}_pos").weight[cfg.pos_offset : cfg.pos_offset + T]  # [T, d]
        ctx.rec(names.side_entry(side, "pos"), pos, batched=False)
        x = x + pos
    norm = getattr(model, f"{side}_embed_norm", None)
    if norm is not None:
        x = norm(x, ctx.rec, names.embed_norm(side))
    x = project_embedding(model, x, side, ctx.rec)  # [B, T, e] -> [B, T, d] when factorised (ALBERT, ELECTRA)
    ctx.rec(names.side_entry(side, "input"), x)
    return ctx.drop(x)


class OutputHead(nn.Module):
    """BERT's masked-LM transform before the vocabulary projection: norm(act(h W + b))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.embed_width)  # ALBERT: d -> e, back to the embedding's width
        self.norm = make_norm(cfg.norm, cfg.embed_width, cfg.layer_norm_eps, cfg.norm_bias)
        self.act = ACTIVATION_FUNCTIONS[cfg.activation]

    def forward(self, h: Tensor, rec: Recorder) -> Tensor:
        """h [B, T, d] -> [B, T, d]; records head.pre, head.hidden and the norm head.norm.*"""
        pre = self.dense(h)  # [B, T, d]
        hidden = self.act(pre)  # [B, T, d]
        rec(names.head_entry("pre"), pre)
        rec(names.head_entry("hidden"), hidden)
        return self.norm(hidden, rec, names.head_entry("norm"))


def add_ends(model: Transformer, cfg: ModelConfig) -> None:
    """The embedding-side and output-side modules of imported architectures (none for the default config)."""
    d = cfg.embed_width  # the embedding tables' width (d_model unless factorised)
    sides = [s for s, present in (("src", cfg.has_encoder), ("tgt", cfg.has_decoder)) if present]
    for side in sides:
        if cfg.type_vocab_size:
            setattr(model, f"{side}_type_embed", nn.Embedding(cfg.type_vocab_size, d))
        if cfg.embed_norm:
            setattr(model, f"{side}_embed_norm", make_norm(cfg.norm, d, cfg.layer_norm_eps, cfg.norm_bias))
        add_projection(model, cfg, side)
    model.register_module("out_head", OutputHead(cfg) if cfg.output_head else None)
    if cfg.replaced_head:
        model.register_module("out_head", ReplacedHead(cfg))
    tied_bias = cfg.tie_output and cfg.has_bias("logits")
    model.register_parameter("out_bias", nn.Parameter(torch.zeros(cfg.out_vocab_size)) if tied_bias else None)


def project(model: Transformer, h: Tensor, rec: Recorder) -> Tensor:
    """h [B, T, d] -> logits [B, T, V]: the output head if any, then the projection (and logit bias)."""
    if isinstance(model.out_head, ReplacedHead):  # ELECTRA's discriminator: [B, T, 2], no vocabulary
        return model.out_head(h, rec)
    if isinstance(model.out_head, OutputHead):  # or None (set by add_ends)
        h = model.out_head(h, rec)
    if model.config.output_rescale:  # T5 with tied embeddings: h × d_model^-0.5 before the projection
        h = h * model.config.d_model**-0.5
    if model.out_proj is not None:
        return model.out_proj(h)
    table = model.tgt_embed if model.config.has_decoder else model.src_embed
    logits = h @ table.weight.T  # [B, T, V]
    return logits + model.out_bias if isinstance(model.out_bias, Tensor) else logits  # out_bias: a Parameter or None
