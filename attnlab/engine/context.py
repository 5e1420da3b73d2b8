"""What one run needs at every layer (RunContext) and the two wirings every sub-layer shares: the residual
block (post-norm, pre-norm, no residual) and a stack's final norm.

Shapes: B batch, T sequence length, d = d_model.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.engine import names, patching
from attnlab.engine.config import ModelConfig
from attnlab.engine.masks import Device, MaskBuilder, additive_mask
from attnlab.engine.norms import LayerNorm, RMSNorm, layer_norm
from attnlab.engine.options import ResolvedOptions, RunOptions
from attnlab.engine.positional import rotary_angles
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import LayerDone, LayerInputs, LayerKey, RelativeInputs, Resume


def cast_tables(tables: tuple[Tensor, Tensor] | None, dtype: torch.dtype | None) -> tuple[Tensor, Tensor] | None:
    """Rotary (cos, sin) tables [L, r/2] computed in float32, cast to the run's compute dtype (as transformers
    casts them); None stays None."""
    if tables is None or dtype is None:
        return tables
    return tables[0].to(dtype), tables[1].to(dtype)


class RunContext:
    """What every layer needs to know about this run, read off the ResolvedOptions (resolved here when the
    caller passed plain RunOptions; LiveModel passes the ones its Trace will carry)."""

    def __init__(
        self,
        config: ModelConfig,
        options: RunOptions,
        rec: Recorder,
        dropout: float,
        device: Device,
        dtype: torch.dtype | None = None,
        positions: int | None = None,
    ):
        run = options if isinstance(options, ResolvedOptions) else options.resolved(config)
        self.norm_first = run.norm_first
        self.output_norm = run.output_norm  # w-norms: x + norm(F(x)) (OLMo-2)
        self.n_heads = run.heads
        self.scale = run.scale
        self.residual = run.residual
        self.projections = run.projections
        self.options = run
        self.eps = config.layer_norm_eps
        self.rec = rec
        self.dropout = dropout
        rotary_on = config.positional == "rotary" and options.positional
        d_head = (config.attn_width if run.projections else config.d_model) // self.n_heads  # w-headdim
        # the rotary tables of the positions this run has (`positions`; all of max_len when not given): a
        # 131,072-position Llama 3 would compute 64 MiB of them on every run and every recomputed layer
        rows = min(config.max_len, positions) if positions else config.max_len
        self.rotary = (
            rotary_angles(rows, config.rotary_dims(d_head), device, config.rope_theta, config)  # 2 x [rows, r/2]
            if rotary_on
            else None
        )
        self.rotary = cast_tables(self.rotary, dtype)  # weights as stored: tables in float32, cast as HF does
        # w-norms: Gemma 3's local layers turn Q and K with their own base, plain rotary (rope_local_theta)
        local = rotary_on and config.rope_local_theta and config.sliding_window
        self.local_rotary = (
            cast_tables(rotary_angles(rows, config.rotary_dims(d_head), device, config.rope_local_theta), dtype)
            if local
            else None
        )
        self.window_pattern = config.sliding_window_pattern
        # holds no ctx: no reference cycle
        self.masks = MaskBuilder(run, rec.enabled, device, dtype, config.sliding_window, config.sliding_window_pattern)
        self.resume: Resume | None = None  # start at a later layer with the previous run's inputs (run_inputs.py)
        self.inputs: LayerInputs | None = None  # where this run keeps each layer's input, when asked to
        self.token_types: dict[str, Tensor] = {}  # side -> token type ids [B, T] (absent: every token type 0)
        self.relative: RelativeInputs | None = None  # DeBERTa's relative embeddings for the encoder's layers
        # activation patching (engine/patching.py): {entry: its patches}, and the sites some patch reaches into
        self.patches = patching.by_entry(run.patch) if run.patch else {}
        self.patch_sites = patching.sites_of(self.patches)

    def rotary_at(self, site: str) -> tuple[Tensor, Tensor] | None:
        """The (cos, sin) tables of a site: a local (sliding-window) layer's own when the model has them (Gemma 3),
        else the run's."""
        if self.local_rotary is not None and names.takes_window(site, self.window_pattern):
            return self.local_rotary
        return self.rotary

    def start(self, stack: str) -> int:
        """The first layer of `stack` this run computes."""
        return self.resume.start(stack) if self.resume is not None else 0

    def layer_done(self, stack: str, index: int) -> None:
        """After layer `index` of `stack`: a run of that one layer (Resume.only) stops here."""
        if self.resume is not None and self.resume.only and (stack, index) == (self.resume.stack, self.resume.layer):
            raise LayerDone

    def patched(self, name: str, x: Tensor) -> Tensor:
        """x [1, ...] with this run's patches of entry `name` applied (x itself when none); an entry recorded
        before its patch point (a site's context, an FFN's output) is recorded again, in its place."""
        found = self.patches.get(name) if self.patches else None
        if found is None:
            return x
        x = patching.replaced(x, found)
        if name in self.rec:
            self.rec(name, x)
        return x

    def site_patch(self, site: str) -> Callable[[str, Tensor], Tensor] | None:
        """What an attention site's forward calls at its patch points, or None when no patch reaches it."""
        return self.patched if site in self.patch_sites else None

    def keep(self, key: LayerKey, x: Tensor) -> None:
        if self.inputs is not None:
            self.inputs.keep(key, x)

    def drop(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.dropout, training=True) if self.dropout > 0 else x


def final_norm(trained: LayerNorm | RMSNorm | None, x: Tensor, ctx: RunContext, stack: str) -> Tensor:
    """x [B, T, d] -> [B, T, d]: the norm after a stack's last layer, recorded as names.stack_norm(stack).
    RunOptions.final_norm None keeps the trained one (or none); False skips it; True keeps the trained one or,
    for a model trained without, applies a parameter-free LayerNorm (gamma 1, beta 0)."""
    wanted = ctx.options.final_norm
    name = names.stack_norm(stack)
    if wanted is False or (wanted is None and trained is None):
        return x
    if trained is not None:
        return trained(x, ctx.rec, name)
    return layer_norm(x, None, None, ctx.eps, ctx.rec, name)


def parallel_block(
    x: Tensor,
    attention: Callable[[Tensor], Tensor],
    ffn: Callable[[Tensor], Tensor],
    norms: tuple[LayerNorm | RMSNorm, LayerNorm | RMSNorm],
    ctx: RunContext,
    layer_name: str,
) -> Tensor:
    """GPT-NeoX's parallel residual (pre-norm only): y = x + Attn(norm1(x)) + FFN(norm2(x)), both branches
    reading the same x. Records resid 1 = x + Attn(…) and resid 2 = y (without the residual: no + x)."""
    y = residual_block(x, attention, norms[0], ctx, layer_name, 1)  # [B, T, d]
    h = ctx.drop(ffn(norms[1](x, ctx.rec, names.norm(layer_name, 2))))  # [B, T, d], from x, not from y
    y = y + h
    ctx.rec(names.resid(layer_name, 2), y)
    return y


def residual_block(
    x: Tensor,
    sublayer: Callable[[Tensor], Tensor],
    norm: LayerNorm | RMSNorm,
    ctx: RunContext,
    layer_name: str,
    n: int,
    post: LayerNorm | RMSNorm | None = None,
) -> Tensor:
    """post-norm: norm(x + sublayer(x));  pre-norm: x + sublayer(norm(x));  the norm on the output (OLMo-2):
    x + norm(sublayer(x));  with a `post` norm too (Gemma 2's sandwich): x + post(sublayer(norm(x))), post
    recorded as names.post_norm(layer, n).  Records names.resid(layer, n)."""
    if ctx.output_norm:
        if post is None:
            h = ctx.drop(norm(sublayer(x), ctx.rec, names.norm(layer_name, n)))  # [B, T, d]
        else:
            h = sublayer(norm(x, ctx.rec, names.norm(layer_name, n)))  # [B, T, d]
            h = ctx.drop(post(h, ctx.rec, names.post_norm(layer_name, n)))
        y = x + h if ctx.residual else h
        ctx.rec(names.resid(layer_name, n), y)
        return y
    if ctx.norm_first:
        h = ctx.drop(sublayer(norm(x, ctx.rec, names.norm(layer_name, n))))
        y = x + h if ctx.residual else h
        ctx.rec(names.resid(layer_name, n), y)
        return y
    h = ctx.drop(sublayer(x))
    y = x + h if ctx.residual else h
    ctx.rec(names.resid(layer_name, n), y)
    return norm(y, ctx.rec, names.norm(layer_name, n))


def build_mask(
    site: str,
    Tq: int,
    Tk: int,
    key_pad: Tensor | None,
    ctx: RunContext,
    device: Device,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """Additive mask [B or 1, 1, Tq, Tk]: 0 where a query may look, -inf where it may not."""
    return additive_mask(site, Tq, Tk, key_pad, ctx.options, device, dtype, ctx.masks.window_of(site))
