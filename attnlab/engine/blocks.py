"""The encoder and decoder layers: attention and feed-forward sub-layers, each wired by `residual_block`.

Shapes: B batch, S source length, T target length, d = d_model.
"""

from __future__ import annotations

from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.context import RunContext, parallel_block, residual_block
from attnlab.engine.ffn import make_ffn
from attnlab.engine.layers import make_attention
from attnlab.engine.masks import AttentionMask
from attnlab.engine.norms import LayerNorm, RMSNorm, make_norm


def norm_of(cfg: ModelConfig) -> LayerNorm | RMSNorm:
    return make_norm(cfg.norm, cfg.d_model, cfg.layer_norm_eps, cfg.norm_bias)


def attend(
    attention: nn.Module,
    h: Tensor,
    memory: Tensor,
    mask: AttentionMask,
    ctx: RunContext,
    site: str,
    rotary: tuple[Tensor, Tensor] | None,
) -> Tensor:
    """One attention sub-layer with this run's settings: queries from h [B, Tq, d], keys and values from
    memory [B, Tk, d] (h itself for self-attention); `rotary` is None where no rotary positions apply
    (cross-attention). -> [B, Tq, d]"""
    return attention(
        h,
        memory,
        mask,
        ctx.n_heads,
        ctx.scale,
        rotary,
        ctx.rec,
        site,
        ablate=ctx.options.ablations(site),
        projections=ctx.projections,
        relative=ctx.relative,
        patch=ctx.site_patch(site),
    )


def feed_forward(ffn: nn.Module, h: Tensor, ctx: RunContext, prefix: str) -> Tensor:
    """The layer's FFN on h [B, T, d] -> [B, T, d], its output patched when the run patches it."""
    out: Tensor = ffn(h, ctx.rec, prefix)
    return ctx.patched(names.ffn_entry(prefix, "out"), out) if ctx.patches else out


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = make_attention(cfg)
        self.ffn = make_ffn(cfg)
        self.norm1 = norm_of(cfg)
        self.norm2 = norm_of(cfg)

    def forward(self, x: Tensor, mask: AttentionMask, ctx: RunContext, prefix: str) -> Tensor:
        """x [B, S, d] -> [B, S, d]"""
        site = names.site(prefix, "self")
        x = residual_block(
            x, lambda h: attend(self.self_attn, h, h, mask, ctx, site, ctx.rotary), self.norm1, ctx, prefix, 1
        )
        x = residual_block(x, lambda h: feed_forward(self.ffn, h, ctx, prefix), self.norm2, ctx, prefix, 2)
        x = ctx.patched(names.layer_out(prefix), x)
        ctx.rec(names.layer_out(prefix), x)
        return x


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, cross: bool, index: int = 0):
        super().__init__()
        self.self_attn = make_attention(cfg, index)  # index: this layer's place in the stack
        self.cross_attn = make_attention(cfg) if cross else None
        self.ffn = make_ffn(cfg)
        self.norm1 = norm_of(cfg)
        self.norm2 = norm_of(cfg)
        self.norm3 = norm_of(cfg) if cross else None
        sandwich = cfg.sublayer_norm == "sandwich" and not cross  # Gemma 2: a norm on each sub-layer's output too
        self.post_norm1: LayerNorm | RMSNorm | None = norm_of(cfg) if sandwich else None
        self.post_norm2: LayerNorm | RMSNorm | None = norm_of(cfg) if sandwich else None
        self.parallel = cfg.parallel_residual and not cross  # GPT-NeoX's use_parallel_residual
        self.shared_norm = cfg.shared_norm  # Phi: norm 1 feeds both branches (norm2 holds a copy of it)

    def forward(
        self,
        y: Tensor,
        memory: Tensor | None,
        self_mask: AttentionMask,
        cross_mask: AttentionMask | None,
        ctx: RunContext,
        prefix: str,
    ) -> Tensor:
        """y [B, T, d], memory [B, S, d] or None -> [B, T, d]"""

        def attend_self(h: Tensor) -> Tensor:
            site = names.site(prefix, "self")
            return attend(self.self_attn, h, h, self_mask, ctx, site, ctx.rotary_at(site))  # Gemma 3: local rope

        def attend_memory(h: Tensor) -> Tensor:  # queries from the decoder, keys and values from the encoder
            assert self.cross_attn is not None and memory is not None and cross_mask is not None
            return attend(self.cross_attn, h, memory, cross_mask, ctx, names.site(prefix, "cross"), None)

        if self.parallel and ctx.norm_first:
            ffn = lambda h: feed_forward(self.ffn, h, ctx, prefix)  # noqa: E731
            second = self.norm1 if self.shared_norm else self.norm2
            y = parallel_block(y, attend_self, ffn, (self.norm1, second), ctx, prefix)
            y = ctx.patched(names.layer_out(prefix), y)
            ctx.rec(names.layer_out(prefix), y)
            return y
        y = residual_block(y, attend_self, self.norm1, ctx, prefix, 1, self.post_norm1)
        n, norm = 2, self.norm2
        if self.cross_attn is not None and self.norm3 is not None:
            y = residual_block(y, attend_memory, self.norm2, ctx, prefix, 2)
            n, norm = 3, self.norm3
        y = residual_block(y, lambda h: feed_forward(self.ffn, h, ctx, prefix), norm, ctx, prefix, n, self.post_norm2)
        y = ctx.patched(names.layer_out(prefix), y)
        ctx.rec(names.layer_out(prefix), y)
        return y
