"""The Transformer: encoder-decoder, decoder-only or encoder-only, built from one set of parts.

The layers are in blocks.py, the run's context and the residual wiring in context.py, the masks in masks.py.
Every sub-layer is wired by `residual_block`, so post-norm, pre-norm and "no residual" are one switch each.
Shapes: B batch, S source length, T target length, d = d_model, V vocabulary size.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.engine import names, position_bias, relative_key
from attnlab.engine.allocator import keep_freed_memory
from attnlab.engine.bias_masks import with_position_bias
from attnlab.engine.blocks import DecoderLayer, EncoderLayer, norm_of
from attnlab.engine.config import ModelConfig
from attnlab.engine.context import RunContext, build_mask, final_norm, residual_block
from attnlab.engine.disentangled import RelativeTable
from attnlab.engine.embedding import OutputHead, SideTables, add_ends, embed_tokens
from attnlab.engine.encoder_parts import ReplacedHead, encoder_layers
from attnlab.engine.masks import MaskBuilder, additive_mask, padded_keys
from attnlab.engine.options import DEFAULT_OPTIONS, RunOptions
from attnlab.engine.positional import sinusoidal_table
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import MEMORY, LayerInputs, Resume
from attnlab.engine.softcap import cap_logits


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
            self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.embed_width)
            self.encoder = nn.ModuleList(encoder_layers(cfg))
            self.enc_norm = norm_of(cfg) if cfg.final_norm else None
        if cfg.has_decoder:
            shared = cfg.share_embeddings and cfg.has_encoder
            self.tgt_embed = self.src_embed if shared else nn.Embedding(cfg.tgt_vocab_size, d)
            cross = cfg.has_encoder
            self.decoder = nn.ModuleList(DecoderLayer(cfg, cross, i) for i in range(cfg.n_decoder_layers))
            self.dec_norm = norm_of(cfg) if cfg.final_norm else None
        if cfg.positional == "learned":  # rows pos_offset … pos_offset + max_len - 1 are used
            if cfg.has_encoder:
                self.src_pos = nn.Embedding(cfg.max_len + cfg.pos_offset, cfg.embed_width)
            if cfg.has_decoder:
                self.tgt_pos = nn.Embedding(cfg.max_len + cfg.pos_offset, d)
        self.register_buffer("sinusoid", self.sinusoid_table(), persistent=False)  # [max_len, d]
        self.out_proj = None if cfg.tie_output else nn.Linear(d, cfg.out_vocab_size, bias=cfg.has_bias("logits"))
        add_ends(self, cfg)
        self.rel = RelativeTable(cfg) if cfg.disentangled else None  # DeBERTa's relative embeddings
        position_bias.add_bias_tables(self, cfg)  # T5-style learned relative position bias
        if initialise:  # False: the caller fills every parameter (engine/build.empty_transformer)
            self._init_weights()

    def sinusoid_table(self) -> Tensor:
        """The fixed sinusoidal positions of this config, [max_len, d] (a buffer, never stored in checkpoints);
        [1, d] for other encodings, which never read it (a 128k-position Llama would need 1.6 GB for nothing)."""
        rows = self.config.max_len if self.config.positional == "sinusoidal" else 1
        return sinusoidal_table(rows, self.config.d_model, self.config.sinusoidal_layout)

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
        x = embed_tokens(
            self.side_tables(side), self.config, ids, side, ctx.rec, ctx.token_types.get(side), ctx.options.positional
        )
        return ctx.drop(x)

    def side_tables(self, side: str) -> SideTables:
        """The tables and modules that embed one side's tokens ("src" or "tgt")."""
        positions = None
        if self.config.positional == "sinusoidal":
            positions = self.sinusoid  # [max_len, d]
        elif self.config.positional == "learned":
            positions = getattr(self, f"{side}_pos").weight  # [pos_offset + max_len, e]
        return SideTables(
            tokens=self.src_embed if side == "src" else self.tgt_embed,
            types=getattr(self, f"{side}_type_embed", None),
            positions=positions,
            norm=getattr(self, f"{side}_embed_norm", None),
            proj=getattr(self, f"{side}_embed_proj", None),
        )

    def encode(self, src_ids: Tensor, src_pad: Tensor | None, ctx: RunContext) -> Tensor:
        """src_ids [B, S] -> memory [B, S, d]"""
        start = ctx.start("enc")
        x = ctx.resume.previous.get(("enc", start)) if start and ctx.resume else self.embed(src_ids, "src", ctx)
        S = src_ids.shape[1]
        src_keys = padded_keys(src_pad, ctx.options)
        ctx.relative = self.rel(S, ctx) if self.rel is not None else None  # [2k, d] table, [S, S] rows
        ctx.relative = ctx.relative or relative_key.run_inputs(
            S, self.config, ctx, src_ids.device
        )  # BERT's relative_key: [S, S] rows
        for i, layer in enumerate(self.encoder):
            if i < start:
                continue
            ctx.keep(("enc", i), x)
            layer_name = names.layer("enc", i)
            x = layer(x, ctx.masks(names.site(layer_name, "self"), S, S, src_keys), ctx, layer_name)
            ctx.layer_done("enc", i)
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
            ctx.layer_done("dec", i)
        y = final_norm(self.dec_norm, y, ctx, "dec")
        ctx.rec(names.stack_out("dec"), y)
        return y

    def project(self, h: Tensor, rec: Recorder | None = None) -> Tensor:
        """h [B, T, d] -> logits [B, T, V]: the output head if any, then the projection (and logit bias)."""
        rec = rec if rec is not None else Recorder(False)
        if isinstance(self.out_head, ReplacedHead):  # ELECTRA's discriminator: [B, T, 2], no vocabulary
            return self.out_head(h, rec)
        if isinstance(self.out_head, OutputHead):  # or None (set by add_ends)
            h = self.out_head(h, rec)
        if self.config.output_rescale:  # T5 with tied embeddings: h × d_model^-0.5 before the projection
            h = h * self.config.d_model**-0.5
        if self.out_proj is not None:
            return self.out_proj(h)
        table = self.tgt_embed if self.config.has_decoder else self.src_embed
        logits = h @ table.weight.T  # [B, T, V]
        return logits + self.out_bias if isinstance(self.out_bias, Tensor) else logits  # a Parameter or None

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
        src_types: Tensor | None = None,
    ) -> Tensor:
        """Returns logits [B, T, V] (decoder architectures) or [B, S, V] (encoder-only).

        src_types: long [B, S], the token type (segment) of each source token, for models with a token-type
        table (BERT: 0 for sentence A, 1 for sentence B); None: every token has type 0.
        src_pad / tgt_pad: bool [B, S] / [B, T], True at <pad> positions (used by the padding mask).
        resume: start at a later layer from the previous run's layer inputs (its earlier entries must already
        be in `rec`); inputs: where to keep this run's layer inputs (see engine/run_inputs.py, engine/runcache.py).
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
        positions = max(x.shape[1] for x in (src_ids, tgt_ids) if x is not None)
        dropout = self.dropout if self.training else 0.0
        ctx = RunContext(cfg, options, rec, dropout, ids.device, self.sinusoid.dtype, positions)
        ctx.resume, ctx.inputs = resume, inputs
        # ALiBi, T5: self-attention masks carry the position bias (engine/position_bias.py)
        ctx.masks = with_position_bias(ctx.masks, cfg, self, ctx.n_heads, ctx.options.positional)
        if src_types is not None:
            ctx.token_types["src"] = src_types
        memory: Tensor | None
        if resume is not None and resume.skips_encoder() and cfg.has_encoder:
            memory = resume.previous.get(MEMORY)  # [B, S, d], the encoder's output is unchanged
        else:
            memory = self.encode(src_ids, src_pad, ctx) if src_ids is not None and cfg.has_encoder else None
        h = self.decode(tgt_ids, tgt_pad, memory, src_pad, ctx) if tgt_ids is not None and cfg.has_decoder else memory
        assert h is not None  # every architecture has an encoder or a decoder
        logits = cap_logits(self.project(h, rec), cfg.final_softcap, rec)  # Gemma 2's final soft-capping
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


__all__ = [  # the run's parts lived here before; importers of these names keep working
    "DecoderLayer",
    "EncoderLayer",
    "MaskBuilder",
    "RunContext",
    "Transformer",
    "additive_mask",
    "build_mask",
    "final_norm",
    "keep_freed_memory",
    "norm_of",
    "padded_keys",
    "residual_block",
]
