"""Encoder, decoder and the three architectures built from one set of parts.

Every sub-layer is wired by `residual_block`, so post-norm, pre-norm and "no residual" are one switch each.
Shapes: B batch, S source length, T target length, d = d_model, V vocabulary size.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.embedding import add_ends, embed_tokens, project
from attnlab.engine.ffn import make_ffn
from attnlab.engine.layers import NEG_INF, AttentionMask, make_attention
from attnlab.engine.norms import LayerNorm, RMSNorm, layer_norm, make_norm
from attnlab.engine.options import DEFAULT_OPTIONS, RunOptions
from attnlab.engine.positional import rotary_angles, sinusoidal_table
from attnlab.engine.runcache import MEMORY, LayerInputs, LayerKey, Resume
from attnlab.engine.trace import Recorder

Device = torch.device | str  # where a run puts its tensors


class RunContext:
    """What every layer needs to know about this run, resolved once from the RunOptions."""

    def __init__(
        self,
        config: ModelConfig,
        options: RunOptions,
        rec: Recorder,
        dropout: float,
        device: Device,
        dtype: torch.dtype | None = None,
    ):
        self.norm_first = options.effective_norm_first(config)
        self.n_heads = options.effective_heads(config)
        self.scale = options.scale
        self.residual = options.residual
        self.projections = options.projections
        self.options = options
        self.eps = config.layer_norm_eps
        self.rec = rec
        self.dropout = dropout
        rotary_on = config.positional == "rotary" and options.positional
        d_head = config.d_model // self.n_heads
        self.rotary = (
            rotary_angles(config.max_len, d_head, device, config.rope_theta)  # 2 x [L, dk/2]
            if rotary_on
            else None
        )
        self.masks = MaskBuilder(options, rec.enabled, device, dtype)  # holds no ctx: no reference cycle
        self.resume: Resume | None = None  # start at a later layer with the previous run's inputs (runcache.py)
        self.inputs: LayerInputs | None = None  # where this run keeps each layer's input, when asked to

    def start(self, stack: str) -> int:
        """The first layer of `stack` this run computes."""
        return self.resume.start(stack) if self.resume is not None else 0

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


def residual_block(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: LayerNorm | RMSNorm, ctx: RunContext, layer_name: str, n: int
) -> Tensor:
    """post-norm: norm(x + sublayer(x));  pre-norm: x + sublayer(norm(x)).  Records names.resid(layer, n)."""
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
    return additive_mask(site, Tq, Tk, key_pad, ctx.options, device, dtype)


def additive_mask(
    site: str,
    Tq: int,
    Tk: int,
    key_pad: Tensor | None,
    opts: RunOptions,
    device: Device,
    dtype: torch.dtype | None = None,
) -> Tensor:
    """build_mask from the RunOptions alone.  -> [B or 1, 1, Tq, Tk]"""
    causal = opts.is_causal(site)
    cells = [(q, k) for q, k in opts.custom_cells(site) if q < Tq and k < Tk]
    padded = opts.padding_mask and key_pad is not None and bool(key_pad.any())
    if not cells and not padded:  # nothing or the causal triangle: one or two kernels instead of four
        if causal:
            return torch.full((Tq, Tk), NEG_INF, dtype=dtype, device=device).triu_(1)[None, None]
        return torch.zeros(1, 1, Tq, Tk, dtype=dtype, device=device)
    blocked = torch.zeros(Tq, Tk, dtype=torch.bool, device=device)  # [Tq, Tk]
    if causal:
        blocked = torch.ones(Tq, Tk, dtype=torch.bool, device=device).triu(1)
    if cells:
        blocked[[q for q, _ in cells], [k for _, k in cells]] = True
    blocked = blocked[None, None]  # [1, 1, Tq, Tk]
    if padded:
        assert key_pad is not None
        blocked = blocked | key_pad[:, None, None, :]  # [B, 1, Tq, Tk]
    return torch.zeros(blocked.shape, dtype=dtype, device=device).masked_fill(blocked, NEG_INF)


class MaskBuilder:
    """Each distinct mask of a run, built once: layers whose sites block the same cells share one mask.

    Without recording, a mask that blocks nothing or only the causal triangle is never built at all: the fused
    kernel is told `is_causal` instead.
    """

    def __init__(self, options: RunOptions, record: bool, device: Device, dtype: torch.dtype | None):
        self.options = options
        self.record = record
        self.device = device
        self.dtype = dtype
        self._built: dict[tuple, AttentionMask] = {}

    def __call__(self, site: str, Tq: int, Tk: int, key_pad: Tensor | None) -> AttentionMask:
        """key_pad: bool [B, Tk] True at <pad> keys, or None when no key is padding or padding is off."""
        opts = self.options
        causal = opts.is_causal(site)
        cells = frozenset((q, k) for q, k in opts.custom_cells(site) if q < Tq and k < Tk)
        key = (causal, cells, Tq, Tk, None if key_pad is None else id(key_pad))
        mask = self._built.get(key)
        if mask is not None:
            return mask
        plain = not cells and key_pad is None  # blocks nothing, or exactly the causal triangle
        if plain and not self.record:
            mask = AttentionMask(None, causal_only=causal, blocks_nothing=not causal, blocked_rows=False)
        else:
            additive = additive_mask(site, Tq, Tk, key_pad, opts, self.device, self.dtype)  # [B|1,1,Tq,Tk]
            # the causal triangle alone always leaves key 0 open; cells and padding might close a whole row
            mask = AttentionMask(
                additive,
                causal_only=plain and causal,
                blocks_nothing=plain and not causal,
                blocked_rows=False if plain else None,
            )
        self._built[key] = mask
        return mask


def padded_keys(pad: Tensor | None, options: RunOptions) -> Tensor | None:
    """pad: bool [B, T] True at <pad>, or None -> the same when the padding mask applies and some key is
    <pad>, else None (one device sync per side per run, instead of one per layer)."""
    if pad is None or not options.padding_mask or not bool(pad.any()):
        return None
    return pad


_freed_memory_kept = False


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse instead of returning it to the OS straight away.

    A recorded run keeps every intermediate alive (tens of MB for a 6+6-layer model). With glibc's defaults
    that memory goes back to the OS when the previous trace is dropped and is faulted back in, page by page,
    during the next run, which on a small machine costs more than the arithmetic. After this, allocations up
    to 32 MB come from the heap and up to 256 MB of freed heap stays with the process. Process-wide; once;
    Linux/glibc only. Set ATTNLAB_MALLOC_TUNING=0 to leave the allocator alone.
    """
    global _freed_memory_kept
    if _freed_memory_kept:
        return
    _freed_memory_kept = True
    if os.environ.get("ATTNLAB_MALLOC_TUNING", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    libc.mallopt(m_mmap_threshold, 32 << 20)
    libc.mallopt(m_trim_threshold, 256 << 20)


def norm_of(cfg: ModelConfig) -> LayerNorm | RMSNorm:
    return make_norm(cfg.norm, cfg.d_model, cfg.layer_norm_eps, cfg.norm_bias)


class EncoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.self_attn = make_attention(cfg)
        self.ffn = make_ffn(cfg)
        self.norm1 = norm_of(cfg)
        self.norm2 = norm_of(cfg)

    def forward(self, x: Tensor, mask: AttentionMask, ctx: RunContext, prefix: str) -> Tensor:
        """x [B, S, d] -> [B, S, d]"""

        def attend(h: Tensor) -> Tensor:
            site = names.site(prefix, "self")
            return self.self_attn(
                h,
                h,
                mask,
                ctx.n_heads,
                ctx.scale,
                ctx.rotary,
                ctx.rec,
                site,
                ablate=ctx.options.ablations(site),
                projections=ctx.projections,
            )

        x = residual_block(x, attend, self.norm1, ctx, prefix, 1)
        x = residual_block(x, lambda h: self.ffn(h, ctx.rec, prefix), self.norm2, ctx, prefix, 2)
        ctx.rec(names.layer_out(prefix), x)
        return x


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig, cross: bool):
        super().__init__()
        self.self_attn = make_attention(cfg)
        self.cross_attn = make_attention(cfg) if cross else None
        self.ffn = make_ffn(cfg)
        self.norm1 = norm_of(cfg)
        self.norm2 = norm_of(cfg)
        self.norm3 = norm_of(cfg) if cross else None

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
            return self.self_attn(
                h,
                h,
                self_mask,
                ctx.n_heads,
                ctx.scale,
                ctx.rotary,
                ctx.rec,
                site,
                ablate=ctx.options.ablations(site),
                projections=ctx.projections,
            )

        def attend_memory(h: Tensor) -> Tensor:  # queries from the decoder, keys and values from the encoder
            assert self.cross_attn is not None and memory is not None and cross_mask is not None
            site = names.site(prefix, "cross")
            return self.cross_attn(
                h,
                memory,
                cross_mask,
                ctx.n_heads,
                ctx.scale,
                None,
                ctx.rec,
                site,
                ablate=ctx.options.ablations(site),
                projections=ctx.projections,
            )

        y = residual_block(y, attend_self, self.norm1, ctx, prefix, 1)
        n, norm = 2, self.norm2
        if self.cross_attn is not None and self.norm3 is not None:
            y = residual_block(y, attend_memory, self.norm2, ctx, prefix, 2)
            n, norm = 3, self.norm3
        y = residual_block(y, lambda h: self.ffn(h, ctx.rec, prefix), norm, ctx, prefix, n)
        ctx.rec(names.layer_out(prefix), y)
        return y


class Transformer(nn.Module):
    """Encoder-decoder, decoder-only or encoder-only, by `config.arch`. Parameter names are the
    checkpoint's."""

    sinusoid: Tensor  # a registered buffer [max_len, d]

    def __init__(self, config: ModelConfig, initialise: bool = True):
        super().__init__()
        cfg = self.config = config.validate()
        self.dropout = 0.0  # set by training only
        d = cfg.d_model
        if cfg.has_encoder:
            self.src_embed = nn.Embedding(cfg.src_vocab_size, d)
            self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
            self.enc_norm = norm_of(cfg) if cfg.final_norm else None
        if cfg.has_decoder:
            shared = cfg.share_embeddings and cfg.has_encoder
            self.tgt_embed = self.src_embed if shared else nn.Embedding(cfg.tgt_vocab_size, d)
            cross = cfg.has_encoder
            self.decoder = nn.ModuleList(DecoderLayer(cfg, cross) for _ in range(cfg.n_decoder_layers))
            self.dec_norm = norm_of(cfg) if cfg.final_norm else None
        if cfg.positional == "learned":  # rows pos_offset … pos_offset + max_len - 1 are used
            if cfg.has_encoder:
                self.src_pos = nn.Embedding(cfg.max_len + cfg.pos_offset, d)
            if cfg.has_decoder:
                self.tgt_pos = nn.Embedding(cfg.max_len + cfg.pos_offset, d)
        self.register_buffer("sinusoid", self.sinusoid_table(), persistent=False)  # [max_len, d]
        self.out_proj = None if cfg.tie_output else nn.Linear(d, cfg.out_vocab_size, bias=cfg.has_bias("logits"))
        add_ends(self, cfg)
        if initialise:  # False: the caller fills every parameter (engine/build.empty_transformer)
            self._init_weights()

    def sinusoid_table(self) -> Tensor:
        """The fixed sinusoidal positions of this config, [max_len, d] (a buffer, never stored in checkpoints)."""
        return sinusoidal_table(self.config.max_len, self.config.d_model, self.config.sinusoidal_layout)

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() == 2 and "embed" not in name and "_pos" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith("embed.weight") or name.endswith("_pos.weight"):
                nn.init.normal_(p, std=self.config.d_model**-0.5)

    # ---- pieces ---------------------------------------------------------------------------------------
    def embed(self, ids: Tensor, side: str, ctx: RunContext) -> Tensor:
        """ids [B, T] -> input [B, T, d]: token embedding (x sqrt(d) if configured) + positional encoding
        (+ token type, embedding norm: see embedding.embed_tokens)."""
        return embed_tokens(self, ids, side, ctx)

    def encode(self, src_ids: Tensor, src_pad: Tensor | None, ctx: RunContext) -> Tensor:
        """src_ids [B, S] -> memory [B, S, d]"""
        start = ctx.start("enc")
        x = ctx.resume.previous.get(("enc", start)) if start and ctx.resume else self.embed(src_ids, "src", ctx)
        S = src_ids.shape[1]
        src_keys = padded_keys(src_pad, ctx.options)
        for i, layer in enumerate(self.encoder):
            if i < start:
                continue
            ctx.keep(("enc", i), x)
            layer_name = names.layer("enc", i)
            x = layer(x, ctx.masks(names.site(layer_name, "self"), S, S, src_keys), ctx, layer_name)
        x = final_norm(self.enc_norm, x, ctx, "enc")
        ctx.rec(names.stack_out("enc"), x)
        ctx.keep(MEMORY, x)
        return x

    def decode(
        self, tgt_ids: Tensor, tgt_pad: Tensor | None, memory: Tensor | None, src_pad: Tensor | None, ctx: RunContext
    ) -> Tensor:
        """tgt_ids [B, T], memory [B, S, d] or None -> [B, T, d]"""
        start, resume = ctx.start("dec"), ctx.resume
        resumed = resume is not None and resume.stack == "dec"  # this stack's input is the previous run's
        y = resume.previous.get(("dec", start)) if resumed and resume else self.embed(tgt_ids, "tgt", ctx)
        T = tgt_ids.shape[1]
        tgt_keys = padded_keys(tgt_pad, ctx.options)
        src_keys = padded_keys(src_pad, ctx.options) if memory is not None else None
        for i, layer in enumerate(self.decoder):
            if i < start:
                continue
            ctx.keep(("dec", i), y)
            layer_name = names.layer("dec", i)
            self_mask = ctx.masks(names.site(layer_name, "self"), T, T, tgt_keys)
            cross_mask = None
            if memory is not None:
                cross_mask = ctx.masks(names.site(layer_name, "cross"), T, memory.shape[1], src_keys)
            y = layer(y, memory, self_mask, cross_mask, ctx, layer_name)
        y = final_norm(self.dec_norm, y, ctx, "dec")
        ctx.rec(names.stack_out("dec"), y)
        return y

    def project(self, h: Tensor, rec: Recorder | None = None) -> Tensor:
        """h [B, T, d] -> logits [B, T, V]"""
        return project(self, h, rec if rec is not None else Recorder(False))

    # ---- the whole pass -------------------------------------------------------------------------------
    def forward(
        self,
        src_ids: Tensor | None = None,
        tgt_ids: Tensor | None = None,
        *,
        options: RunOptions = DEFAULT_OPTIONS,
        rec: Recorder | None = None,
        src_pad: Tensor | None = None,
        tgt_pad: Tensor | None = None,
        resume: Resume | None = None,
        inputs: LayerInputs | None = None,
    ) -> Tensor:
        """Returns logits [B, T, V] (decoder architectures) or [B, S, V] (encoder-only).

        src_pad / tgt_pad: bool [B, S] / [B, T], True at <pad> positions (used by the padding mask).
        resume: start at a later layer from the previous run's layer inputs (its earlier entries must already
        be in `rec`); inputs: where to keep this run's layer inputs (see engine/runcache.py).
        """
        rec = rec if rec is not None else Recorder(False)
        if rec.enabled:
            keep_freed_memory()
        cfg = self.config
        if (cfg.has_encoder and src_ids is None) or (cfg.has_decoder and tgt_ids is None):
            raise ValueError(
                f"a {cfg.arch} model needs "
                + " and ".join(
                    side for side, needed in (("src_ids", cfg.has_encoder), ("tgt_ids", cfg.has_decoder)) if needed
                )
            )
        ids = src_ids if src_ids is not None else tgt_ids
        assert ids is not None
        ctx = RunContext(cfg, options, rec, self.dropout if self.training else 0.0, ids.device, self.sinusoid.dtype)
        ctx.resume, ctx.inputs = resume, inputs
        memory: Tensor | None
        if resume is not None and resume.skips_encoder() and cfg.has_encoder:
            memory = resume.previous.get(MEMORY)  # [B, S, d], the encoder's output is unchanged
        else:
            memory = self.encode(src_ids, src_pad, ctx) if src_ids is not None and cfg.has_encoder else None
        h = self.decode(tgt_ids, tgt_pad, memory, src_pad, ctx) if tgt_ids is not None and cfg.has_decoder else memory
        assert h is not None  # every architecture has an encoder or a decoder
        logits = self.project(h, rec)
        rec(names.LOGITS, logits)
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
