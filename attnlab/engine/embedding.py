"""The ends of the model: token ids -> input vectors (embedding, token type, positions, embedding norm) and
final hidden states -> logits (optional output head; the projection itself is model.Transformer.project). Each
function takes what it reads (SideTables, the config, the recorder), never the Transformer or the RunContext."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.activations import ACTIVATION_FUNCTIONS
from attnlab.engine.config import ModelConfig
from attnlab.engine.encoder_parts import ReplacedHead, add_projection, project_embedding
from attnlab.engine.norms import LayerNorm, RMSNorm, make_norm
from attnlab.engine.recorder import Recorder


@dataclass(frozen=True)
class SideTables:
    """What embed_tokens reads of a model for one side ("src" or "tgt"): its token table, token-type table, the
    positions table (the sinusoid [max_len, d] or the learned table [pos_offset + max_len, e]; None without
    one), the embedding norm and the factorised embedding's projection (model.Transformer.side_tables)."""

    tokens: nn.Embedding
    types: nn.Embedding | None
    positions: Tensor | None
    norm: LayerNorm | RMSNorm | None
    proj: nn.Linear | None


def embed_tokens(
    tables: SideTables,
    cfg: ModelConfig,
    ids: Tensor,
    side: str,
    rec: Recorder,
    types: Tensor | None = None,
    positional: bool = True,
) -> Tensor:
    """ids [B, T] -> input [B, T, d]: token embedding (x sqrt(d) if configured) + token type (0, or the
    segments `types` [B, T]) + positional encoding (when `positional`: RunOptions.positional), then the
    embedding norm if the model has one. Recorded in `rec`; the caller applies dropout."""
    x = tables.tokens(ids)  # [B, T, d]
    if cfg.scale_embedding:
        x = x * math.sqrt(cfg.d_model)
    rec(names.side_entry(side, "embed"), x)
    T = ids.shape[1]
    if tables.types is not None:
        if types is None:  # one sentence: type 0 (a sentence pair's segments are `types`)
            token_type = tables.types.weight[0].expand(T, -1)  # [T, d]
        else:
            token_type = tables.types(types)  # [B, T, d]
        rec(names.side_entry(side, names.TYPE), token_type, batched=types is not None)
        x = x + token_type
    if positional and cfg.adds_position_table and tables.positions is not None:
        offset = 0 if cfg.positional == "sinusoidal" else cfg.pos_offset
        pos = tables.positions[offset : offset + T]  # [T, d]
        rec(names.side_entry(side, "pos"), pos, batched=False)
        x = x + pos
    if tables.norm is not None:
        x = tables.norm(x, rec, names.embed_norm(side))
    x = project_embedding(tables.proj, x, side, rec)  # [B, T, e] -> [B, T, d] when factorised (ALBERT, ELECTRA)
    rec(names.side_entry(side, "input"), x)
    return x


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


def add_ends(model: nn.Module, cfg: ModelConfig) -> None:
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
