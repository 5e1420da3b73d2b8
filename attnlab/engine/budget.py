"""How much memory a recorded run's trace will hold, known before the run; whether it fits on the GPU.

The estimate mirrors what the engine stores (see layers.py / blocks.py / model.py and the Derived rules in derived.py):
per attention site Q, K, V, the context (what the fused kernel computed, layers.recorded_fused_attention)
and the output; scores, scaled, masked, weights and concat are derived, on read, from Q, K and the mask (each
Q head from the K/V head it shares under grouped-query attention, where K and V are H_kv·dk wide). Nothing
of size [H, Tq, Tk] is stored but the masks. With the
projections off Q, K and V are views of inputs the trace holds anyway, except the rotated Q and K of a
self-attention site with rotary positions. Per sub-layer the residual sum and the norm's output (a post-norm
norm's input *is* the residual sum, a pre-norm one's is the previous output: no copies; an RMSNorm keeps its
RMS [T] too); per FFN its pre-activation and output (a gated FFN: gate, up, hidden and output); one mask per
distinct mask; the logits. DeBERTa's sites (disentangled attention) are recorded step by step: their scores
and position terms c2p, p2c [H, T, T] are stored (disentangled.trace_floats). tests/engine/test_trace_budget.py
checks it against real traces.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.engine import score_steps
from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions
from attnlab.engine.replay import ATTENTION, OUTPUTS, WHOLE, Keep

# While a layer runs, besides the trace: the fused kernel's blocks (a recording run never makes a site's
# [H, Tq, Tk] maps) and the FFN activation; we ask for room for this many [Tq, Tk] maps of one head on top
# of the trace (an ablated site's step-by-step attention, the row blocks of a read, the kernel's own work).
WORKING_SITE_MATRICES = 4
HEADROOM = 0.9  # use at most this share of the free memory


@dataclass(frozen=True)
class SiteLayout:
    """What every attention site of a run stores (layers.py MultiHeadAttention and attention_steps)."""

    d: int  # Q, the output and a stored context are [Tq, d] (the context as [H, Tq, dk])
    kv_width: int  # K and V are [Tk, kv_width]: H_kv·dk, d_model without grouped-query attention
    heads: int  # H of the run (a re-split's count)
    projections: bool  # off: Q = x_q and K = V = x_kv, views of inputs the trace holds anyway
    rotary: bool  # rotary positions turn Q and K of self-attention sites into new tensors
    width: int = 0  # w-headdim: Q and the context are [Tq, H·dk] when head_dim is set (0: d)


def site_layout(config: ModelConfig, options: RunOptions) -> SiteLayout:
    """The SiteLayout of a run. A re-split into h heads reads W_K/W_V as h·kv_heads/n_heads heads of
    d_model/h floats: K and V keep their width kv_heads·d_head. Without projections K = V = x."""
    return SiteLayout(
        d=config.d_model,
        kv_width=config.kv_heads * config.d_head if options.projections else config.d_model,
        heads=options.effective_heads(config),
        projections=options.projections,
        rotary=config.positional == "rotary" and options.positional,
        width=config.attn_width if options.projections else config.d_model,
    )


def side_floats(T: int, config: ModelConfig, positional: bool) -> int:
    """Input side: embedding, the positions slice and their sum (the sum is the embedding when PE is off), in
    the embedding width (ALBERT's and ELECTRA's are narrower, then projected to d_model); the token types; an
    embedding norm's input and output."""
    width = config.embed_dim or config.d_model
    floats = T * width * (3 if positional else 1)
    floats += T * width * ((1 if config.type_vocab_size else 0) + (2 if config.embed_norm else 0))
    return floats + (T * config.d_model if config.embed_dim else 0)  # the projection to d_model


def head_floats(T: int, config: ModelConfig) -> int:
    """An output head before the projection (BERT's MLM head: dense, activation, LayerNorm in and out; ELECTRA's
    discriminator: dense and activation)."""
    width = config.embed_dim or config.d_model
    return T * width * (4 if config.output_head else 2 if config.replaced_head else 0)


def site_floats(Tq: int, Tk: int, site: SiteLayout, self_attention: bool) -> int:
    """One site: Q [Tq, d], K and V [Tk, kv_width] (with the projections off only the rotated Q and K of a
    self-attention site, [Tq, d] and [Tk, d]), the context [H, Tq, dk] and out [Tq, d] (with the projections
    off out is the concat, a view of the context as the fused kernel lays it out, position by position).
    Scores, scaled, masked, weights and concat are derived."""
    width = site.width or site.d  # H·dk (w-headdim)
    floats = Tq * width + (Tq * site.d if site.projections else 0)  # context, out
    return floats + site_input_floats(Tq, Tk, site, self_attention)  # Q, K, V


def site_input_floats(Tq: int, Tk: int, site: SiteLayout, self_attention: bool) -> int:
    """What a site's maps are derived from: Q [Tq, H·dk], K and V [Tk, kv_width] (with the projections off
    only the rotated Q and K of a self-attention site)."""
    if site.projections:
        return Tq * (site.width or site.d) + 2 * Tk * site.kv_width
    return (Tq + Tk) * site.d if site.rotary and self_attention else 0


def sublayer_floats(T: int, d: int, residual: bool, rms: bool, post_norm: bool = False) -> int:
    """The residual sum (the sub-layer's output itself when the residual is off), the norm's output and an
    RMSNorm's RMS [T] (a LayerNorm's mean and variance are derived); a norm on the sub-layer's output too
    (Gemma 2's sandwich, OLMo-2): its input, output and RMS."""
    floats = T * d * (2 if residual else 1) + (T if rms else 0)
    return floats + ((2 * T * d + (T if rms else 0)) if post_norm else 0)


def ffn_floats(T: int, config: ModelConfig) -> int:
    """One FFN: the pre-activation [T, d_ff] (its activation is derived) and the output [T, d]; a gated FFN
    stores gate, up and hidden [T, d_ff] each."""
    return T * config.d_ff * (3 if config.ffn == "gated" else 1) + T * config.d_model


def layer_floats(T: int, S: int | None, config: ModelConfig, site: SiteLayout, options: RunOptions) -> int:
    """One layer: self-attention over T, cross-attention to S (decoder of an encoder-decoder), FFN; each site
    with what its mechanisms store (score_steps.site_floats: QK-norm's q_in, q_normed, k_in, k_normed)."""
    post_norm = config.sublayer_norm != "input"
    sublayer = sublayer_floats(T, config.d_model, options.residual, config.norm == "rmsnorm", post_norm)
    n = site_floats(T, T, site, self_attention=True) + score_steps.site_floats(config, options, T, T) + sublayer
    if S is not None:
        n += site_floats(T, S, site, self_attention=False) + score_steps.site_floats(config, options, T, S) + sublayer
    return n + ffn_floats(T, config) + sublayer


def final_norm_floats(T: int, config: ModelConfig) -> int:
    """The norm after a stack's last layer: its output [T, d] (its input is the last layer's) and an RMS [T]."""
    if not config.final_norm:
        return 0
    return T * config.d_model + (T if config.norm == "rmsnorm" else 0)


def mask_floats(config: ModelConfig, options: RunOptions, S: int, T: int) -> int:
    """One mask per site kind, plus one per site that has cells of its own."""
    shapes = []
    if config.has_encoder:
        shapes.append(S * S)
    if config.has_decoder:
        shapes.append(T * T)
        if config.has_encoder:
            shapes.append(T * S)
    per_site = [site for site, _cells in options.custom_masks if site.count(".") == 2]
    windowed = shapes[:1] if config.sliding_window else []  # a sliding window's band beside the full mask
    return sum(shapes + windowed) + len(per_site) * max(shapes)


def estimate_trace_bytes(
    config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, element_size: int = 4, keep: Keep = WHOLE
) -> int:
    """Bytes a recorded run's trace holds (tensors stored where the model ran), for sources of `src_len`
    and decoder inputs of `tgt_len` tokens (specials and padding included; the unused side is ignored).
    `keep`: what a lean run (its layers recomputed on read, engine/replay.py) stores of each layer."""
    lean = keep != WHOLE
    d = config.d_model
    positional = options.positional and config.adds_position_table
    site = site_layout(config, options)
    S, T = src_len, tgt_len

    def per_layer(T: int, S: int | None) -> int:  # a lean run keeps the layer's output [T, d] (and Q, K, V)
        if not lean:
            return layer_floats(T, S, config, site, options)
        sites = site_input_floats(T, T, site, True) + (site_input_floats(T, S, site, False) if S is not None else 0)
        return T * d + (sites if keep == ATTENTION else 0)

    floats = mask_floats(config, options, S, T) if keep != OUTPUTS else 0  # OUTPUTS: the masks live in the layers
    ints = 0
    out_len = S
    if config.has_encoder:
        floats += side_floats(S, config, positional)
        floats += config.n_encoder_layers * per_layer(S, None)
        floats += final_norm_floats(S, config)
        ints += S
    if config.has_decoder:
        cross = S if config.has_encoder else None
        floats += side_floats(T, config, positional)
        floats += config.n_decoder_layers * per_layer(T, cross)
        floats += final_norm_floats(T, config)
        ints += T
        out_len = T
    floats += head_floats(out_len, config) + out_len * config.out_vocab_size  # logits; probs are derived
    floats += out_len * config.out_vocab_size if config.final_softcap else 0  # Gemma 2: the logits before the cap
    # each mechanism's: a position bias [H, T, T]; DeBERTa's and relative_key's scores and terms per encoder site
    floats += score_steps.trace_floats(config, options, S, T, lean)
    return floats * element_size + ints * 8


def working_bytes(
    config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, element_size: int = 4, keep: Keep = WHOLE
) -> int:
    """Transient memory of the recorded forward besides the trace (a few one-head maps, one FFN); an ablated
    site still computes its steps for every head at once. A lean run (`keep`): plus one layer's whole record,
    what reading a recomputed layer holds (engine/replay.py), and the masks when the layers keep them."""
    T = max(src_len, tgt_len)
    # an ablated site, and one with score terms (DeBERTa's: recorded step by step), compute every head at once
    stepwise = options.ablate or score_steps.stepwise(config, options)
    heads = options.effective_heads(config) if stepwise else 1
    floats = WORKING_SITE_MATRICES * heads * T * T + 2 * T * config.d_ff
    if keep != WHOLE:
        S = src_len if config.has_encoder and config.has_decoder else None
        floats += layer_floats(T, S, config, site_layout(config, options), options)
    if keep != WHOLE:  # a mechanism's tables live in the layers (a position bias); so do the masks of OUTPUTS
        floats += score_steps.working_floats(config, options, src_len, tgt_len)
        floats += mask_floats(config, options, src_len, tgt_len) if keep == OUTPUTS else 0
    return floats * element_size


def fits_on_device(device: torch.device, needed: int) -> tuple[bool, int]:
    """(whether `needed` bytes fit in the device's free memory, the free bytes). The CPU always fits.

    Free on a GPU: what the driver reports free plus what PyTorch's caching allocator has reserved but not
    allocated (this process reuses it). When the device cannot be queried (a CUDA or driver error, which
    torch raises as a RuntimeError: torch.cuda.CudaError, torch.AcceleratorError), (False, -1): the caller
    then takes the safe path and copies the trace to the host."""
    if device.type != "cuda":
        return True, -1
    try:
        free = cuda_free_bytes(device)
    except RuntimeError:
        return False, -1
    return needed <= HEADROOM * free, free


def cuda_free_bytes(device: torch.device) -> int:
    """Bytes this process can still allocate on a CUDA device: the driver's free memory plus the caching
    allocator's reserved-but-unallocated blocks."""
    driver_free, _total = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return driver_free + cached
