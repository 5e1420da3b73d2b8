"""Encoder, decoder and the three architectures built from one set of parts.

Every sub-layer is wired by `residual_block`, so post-norm, pre-norm and "no residual" are one switch each.
Shapes: B batch, S source length, T target length, d = d_model, V vocabulary size.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnlab.engine.config import ModelConfig
from attnlab.engine.layers import NEG_INF, FeedForward, LayerNorm, MultiHeadAttention
from attnlab.engine.options import RunOptions
from attnlab.engine.positional import rotary_angles, sinusoidal_table
from attnlab.engine.trace import Recorder


class RunContext:
    """What every layer needs to know about this run, resolved once from the RunOptions."""

    def __init__(self, config: ModelConfig, options: RunOptions, rec: Recorder, dropout: float, device):
        self.norm_first = options.effective_norm_first(config)
        self.n_heads = options.effective_heads(config)
        self.scale = options.scale
        self.residual = options.residual
        self.options = options
        self.rec = rec
        self.dropout = dropout
        rotary_on = config.positional == "rotary" and options.positional
        self.rotary = rotary_angles(config.max_len, config.d_model // self.n_heads, device) if rotary_on else None

    def drop(self, x):
        return F.dropout(x, self.dropout, training=True) if self.dropout > 0 else x


def residual_block(x, sublayer, norm: LayerNorm, ctx: RunContext, prefix: str, n: int):
    """post-norm: norm(x + sublayer(x));  pre-norm: x + sublayer(norm(x)).  Records `{prefix}.resid{n}`."""
    if ctx.norm_first:
        h = ctx.drop(sublayer(norm(x, ctx.rec, f"{prefix}.norm{n}")))
        y = x + h if ctx.residual else h
        ctx.rec(f"{prefix}.resid{n}", y)
        return y
    h = ctx.drop(sublayer(x))
    y = x + h if ctx.residual else h
    ctx.rec(f"{prefix}.resid{n}", y)
    return norm(y, ctx.rec, f"{prefix}.norm{n}")


def build_mask(site: str, Tq: int, Tk: int, key_pad, ctx: RunContext, device) -> torch.Tensor:
    """Additive mask [B or 1, 1, Tq, Tk]: 0 where a query may look, -inf where it may not."""
    opts = ctx.options
    blocked = torch.zeros(Tq, Tk, dtype=torch.bool, device=device)  # [Tq, Tk]
    if opts.is_causal(site):
        blocked |= torch.ones(Tq, Tk, dtype=torch.bool, device=device).triu(1)
    cells = [(q, k) for q, k in opts.custom_cells(site) if q < Tq and k < Tk]
    if cells:
        qi, ki = zip(*cells)
        blocked[list(qi), list(ki)] = True
    blocked = blocked[None, None]  # [1, 1, Tq, Tk]
    if opts.padding_mask and key_pad is not None and bool(key_pad.any()):
        blocked = blocked | key_pad[:, None, None, :]  # [B, 1, Tq, Tk]
    return torch.zeros(blocked.shape, device=device).masked_fill(blocked, NEG_INF)


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.bias)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.bias)
        self.norm1 = LayerNorm(cfg.d_model, cfg.layer_norm_eps)
        self.norm2 = LayerNorm(cfg.d_model, cfg.layer_norm_eps)

    def forward(self, x, mask, ctx: RunContext, prefix: str):
        """x [B, S, d] -> [B, S, d]"""

        def attend(h):
            return self.self_attn(h, h, mask, ctx.n_heads, ctx.scale, ctx.rotary, ctx.rec, f"{prefix}.self")

        x = residual_block(x, attend, self.norm1, ctx, prefix, 1)
        x = residual_block(x, lambda h: self.ffn(h, ctx.rec, f"{prefix}.ffn"), self.norm2, ctx, prefix, 2)
        ctx.rec(f"{prefix}.out", x)
        return x


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, cross: bool):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.bias)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.bias) if cross else None
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.bias)
        self.norm1 = LayerNorm(cfg.d_model, cfg.layer_norm_eps)
        self.norm2 = LayerNorm(cfg.d_model, cfg.layer_norm_eps)
        self.norm3 = LayerNorm(cfg.d_model, cfg.layer_norm_eps) if cross else None

    def forward(self, y, memory, self_mask, cross_mask, ctx: RunContext, prefix: str):
        """y [B, T, d], memory [B, S, d] or None -> [B, T, d]"""

        def attend_self(h):
            return self.self_attn(h, h, self_mask, ctx.n_heads, ctx.scale, ctx.rotary, ctx.rec, f"{prefix}.self")

        def attend_memory(h):  # queries from the decoder, keys and values from the encoder; no rotation
            return self.cross_attn(h, memory, cross_mask, ctx.n_heads, ctx.scale, None, ctx.rec, f"{prefix}.cross")

        y = residual_block(y, attend_self, self.norm1, ctx, prefix, 1)
        n = 2
        if self.cross_attn is not None:
            y = residual_block(y, attend_memory, self.norm2, ctx, prefix, 2)
            n = 3
        norm = self.norm3 if self.cross_attn is not None else self.norm2
        y = residual_block(y, lambda h: self.ffn(h, ctx.rec, f"{prefix}.ffn"), norm, ctx, prefix, n)
        ctx.rec(f"{prefix}.out", y)
        return y


class Transformer(nn.Module):
    """Encoder-decoder, decoder-only or encoder-only, by `config.arch`. Parameter names are the checkpoint's."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        cfg = self.config = config.validate()
        self.dropout = 0.0  # set by training only
        d = cfg.d_model
        if cfg.has_encoder:
            self.src_embed = nn.Embedding(cfg.src_vocab_size, d)
            self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
            self.enc_norm = LayerNorm(d, cfg.layer_norm_eps) if cfg.final_norm else None
        if cfg.has_decoder:
            shared = cfg.share_embeddings and cfg.has_encoder
            self.tgt_embed = self.src_embed if shared else nn.Embedding(cfg.tgt_vocab_size, d)
            cross = cfg.has_encoder
            self.decoder = nn.ModuleList(DecoderLayer(cfg, cross) for _ in range(cfg.n_decoder_layers))
            self.dec_norm = LayerNorm(d, cfg.layer_norm_eps) if cfg.final_norm else None
        if cfg.positional == "learned":
            if cfg.has_encoder:
                self.src_pos = nn.Embedding(cfg.max_len, d)
            if cfg.has_decoder:
                self.tgt_pos = nn.Embedding(cfg.max_len, d)
        self.register_buffer("sinusoid", sinusoidal_table(cfg.max_len, d), persistent=False)  # [max_len, d]
        self.out_proj = None if cfg.tie_output else nn.Linear(d, cfg.out_vocab_size, bias=cfg.bias)
        self._init_weights()

    def _init_weights(self):
        for name, p in self.named_parameters():
            if p.dim() == 2 and "embed" not in name and "_pos" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith("embed.weight") or name.endswith("_pos.weight"):
                nn.init.normal_(p, std=self.config.d_model**-0.5)

    # ---- pieces ---------------------------------------------------------------------------------------
    def embed(self, ids, side: str, ctx: RunContext):
        """ids [B, T] -> input [B, T, d]: token embedding (x sqrt(d) if configured) + positional encoding."""
        cfg = self.config
        table = self.src_embed if side == "src" else self.tgt_embed
        x = table(ids)  # [B, T, d]
        if cfg.scale_embedding:
            x = x * math.sqrt(cfg.d_model)
        ctx.rec(f"{side}.embed", x)
        T = ids.shape[1]
        if ctx.options.positional and cfg.positional in ("sinusoidal", "learned"):
            pos = self.sinusoid[:T] if cfg.positional == "sinusoidal" else getattr(self, f"{side}_pos").weight[:T]
            ctx.rec(f"{side}.pos", pos, batched=False)  # [T, d]
            x = x + pos
        ctx.rec(f"{side}.input", x)
        return ctx.drop(x)

    def encode(self, src_ids, src_pad, ctx: RunContext):
        """src_ids [B, S] -> memory [B, S, d]"""
        x = self.embed(src_ids, "src", ctx)
        S = src_ids.shape[1]
        for i, layer in enumerate(self.encoder):
            mask = build_mask(f"enc.{i}.self", S, S, src_pad, ctx, x.device)
            x = layer(x, mask, ctx, f"enc.{i}")
        if self.enc_norm is not None:
            x = self.enc_norm(x, ctx.rec, "enc.norm")
        ctx.rec("enc.out", x)
        return x

    def decode(self, tgt_ids, tgt_pad, memory, src_pad, ctx: RunContext):
        """tgt_ids [B, T], memory [B, S, d] or None -> [B, T, d]"""
        y = self.embed(tgt_ids, "tgt", ctx)
        T = tgt_ids.shape[1]
        for i, layer in enumerate(self.decoder):
            self_mask = build_mask(f"dec.{i}.self", T, T, tgt_pad, ctx, y.device)
            cross_mask = None
            if memory is not None:
                cross_mask = build_mask(f"dec.{i}.cross", T, memory.shape[1], src_pad, ctx, y.device)
            y = layer(y, memory, self_mask, cross_mask, ctx, f"dec.{i}")
        if self.dec_norm is not None:
            y = self.dec_norm(y, ctx.rec, "dec.norm")
        ctx.rec("dec.out", y)
        return y

    def project(self, h):
        """h [B, T, d] -> logits [B, T, V]"""
        if self.out_proj is not None:
            return self.out_proj(h)
        table = self.tgt_embed if self.config.has_decoder else self.src_embed
        return h @ table.weight.T

    # ---- the whole pass -------------------------------------------------------------------------------
    def forward(self, src_ids=None, tgt_ids=None, *, options: RunOptions = RunOptions(), rec: Recorder | None = None,
                src_pad=None, tgt_pad=None):
        """Returns logits [B, T, V] (decoder architectures) or [B, S, V] (encoder-only).

        src_pad / tgt_pad: bool [B, S] / [B, T], True at <pad> positions (used by the padding mask).
        """
        rec = rec if rec is not None else Recorder(False)
        device = (src_ids if src_ids is not None else tgt_ids).device
        ctx = RunContext(self.config, options, rec, self.dropout if self.training else 0.0, device)
        memory = self.encode(src_ids, src_pad, ctx) if self.config.has_encoder else None
        h = self.decode(tgt_ids, tgt_pad, memory, src_pad, ctx) if self.config.has_decoder else memory
        logits = self.project(h)
        rec("logits", logits)
        return logits

    def checkpoint_tensors(self) -> dict[str, torch.Tensor]:
        """The parameters a checkpoint stores: shared/tied ones once, under their first name."""
        seen: set[int] = set()
        out: dict[str, torch.Tensor] = {}
        for name, p in self.named_parameters(remove_duplicate=False):
            if id(p) not in seen:
                seen.add(id(p))
                out[name] = p
        return out
