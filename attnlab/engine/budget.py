"""How much memory a recorded run's trace will hold, known before the run; whether it fits on the GPU.

The estimate mirrors what the engine stores (see layers.py / blocks.py / model.py and the Derived rules in derived.py):
per attention site Q, K, V and the output (scores, scaled, masked, weights, context and concat are
derived); per sub-layer the residual sum and the LayerNorm output (a post-norm LayerNorm's input *is* the
residual sum, a pre-norm one's is the previous output: no copies); per FFN its pre-activation and output;
one mask per distinct mask; the logits. tests/test_trace_budget.py checks it against real traces.
"""

from __future__ import annotations

import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions

# While a layer runs, besides the trace: the attention's scores, scaled, masked and weights of one site
# ([H, Tq, Tk] each) and the FFN activation; we ask for this much room on top of the trace.
WORKING_SITE_MATRICES = 4
HEADROOM = 0.9  # use at most this share of the free memory


def side_floats(T: int, d: int, positional: bool) -> int:
    """Input side: embedding, the positions slice and their sum (the sum is the embedding when PE is off)."""
    return T * d * (3 if positional else 1)


def site_floats(Tq: int, Tk: int, d: int) -> int:
    """Q [Tq, d], K and V [Tk, d], out [Tq, d] (the [H, Tq, Tk] matrices and the context are derived)."""
    return Tq * d + 2 * Tk * d + Tq * d


def sublayer_floats(T: int, d: int, residual: bool) -> int:
    """The residual sum (the sub-layer's output itself when the residual is off) and the LayerNorm output."""
    return T * d * (2 if residual else 1)


def layer_floats(T: int, S: int | None, d: int, d_ff: int, residual: bool) -> int:
    """One layer: self-attention over T, cross-attention to S (decoder of an encoder-decoder), FFN."""
    n = site_floats(T, T, d) + sublayer_floats(T, d, residual)
    if S is not None:
        n += site_floats(T, S, d) + sublayer_floats(T, d, residual)
    return n + T * d_ff + T * d + sublayer_floats(T, d, residual)


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
    return sum(shapes) + len(per_site) * max(shapes)


def projection_floats(config: ModelConfig, S: int, T: int) -> int:
    """Q, K, V of every site (what RunOptions(projections=False) does not store anew)."""
    floats = config.n_encoder_layers * (3 * S * config.d_model) if config.has_encoder else 0
    if config.has_decoder:
        floats += config.n_decoder_layers * 3 * T * config.d_model
        if config.has_encoder:  # cross-attention: Q from T decoder positions, K and V from S source positions
            floats += config.n_decoder_layers * (T + 2 * S) * config.d_model
    return floats


def estimate_trace_bytes(
    config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, element_size: int = 4
) -> int:
    """Bytes a recorded run's trace holds (tensors stored where the model ran), for sources of `src_len`
    and decoder inputs of `tgt_len` tokens (specials and padding included; the unused side is ignored)."""
    d, d_ff = config.d_model, config.d_ff
    positional = options.positional and config.adds_position_table
    S, T = src_len, tgt_len
    floats = mask_floats(config, options, S, T)
    ints = 0
    out_len = S
    if config.has_encoder:
        floats += side_floats(S, d, positional)
        floats += config.n_encoder_layers * layer_floats(S, None, d, d_ff, options.residual)
        floats += S * d if config.final_norm else 0
        ints += S
    if config.has_decoder:
        cross = S if config.has_encoder else None
        floats += side_floats(T, d, positional)
        floats += config.n_decoder_layers * layer_floats(T, cross, d, d_ff, options.residual)
        floats += T * d if config.final_norm else 0
        ints += T
        out_len = T
    floats += out_len * config.out_vocab_size  # logits; probs are derived
    floats += sum(
        (S if site.startswith("enc.") else T) * d  # an ablated site's context is stored, [H, Tq, dk]
        for site in {site for site, _head, _mode in options.ablate}
    )
    if not options.projections:  # Q, K, V are views of inputs the trace holds anyway: only `out` is new
        floats -= projection_floats(config, S, T)
    return floats * element_size + ints * 8


def working_bytes(config: ModelConfig, options: RunOptions, src_len: int, tgt_len: int, element_size: int = 4) -> int:
    """Transient memory of the recorded forward besides the trace (one site's matrices, one FFN)."""
    T = max(src_len, tgt_len)
    heads = options.effective_heads(config)
    return (WORKING_SITE_MATRICES * heads * T * T + 2 * T * config.d_ff) * element_size


def fits_on_device(device: torch.device, needed: int) -> tuple[bool, int]:
    """(whether `needed` bytes fit in the device's free memory, the free bytes). The CPU always fits."""
    if device.type != "cuda":
        return True, -1
    free, _total = torch.cuda.mem_get_info(device)
    return needed <= HEADROOM * free, free
