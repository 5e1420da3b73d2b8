"""The logit lens: what the model would predict after each layer.

The residual stream after layer l (the stack's input for l = 0, then each layer's recorded output
`names.layer_out`) is passed through what the model does after its last layer — the stack's final norm, as
this run applies it (`RunOptions.final_norm`), and the output projection (`Transformer.project`: the output
head where there is one, the unembedding matrix, the logit bias) — and softmax:

    lens_l = softmax(W_U · norm_final(h_l) + b)        h_l [T, d] -> [T, V]

For the last layer this is the model's own output distribution (temperature 1). The trace keeps only the top-k
of each position (`names.LENS_IDS` int64 and `names.LENS_PROBS`, both [L + 1, T, k]), derived on read
(engine/derived.py) one layer and one block of rows at a time, so no [L + 1, T, V] table is ever held.

Shapes: T positions, d = d_model, V vocabulary, L layers, k = LENS_TOP_K (at most V).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

import torch
from torch import Tensor

from attnlab.engine import names
from attnlab.engine.derived import Derived, register
from attnlab.engine.memory import give_back_freed
from attnlab.engine.norms import LayerNorm, RMSNorm, layer_norm
from attnlab.engine.recorder import Entry, Recorder

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import ResolvedOptions

LENS_TOP_K = 5  # the predictions kept per layer and position (the panel's hover lists them)
BLOCK_ELEMENTS = 1 << 22  # logits computed at once: rows × V ≤ this (16 MiB of float32)


def lens_norm(trained: bool, wanted: bool | None) -> str:
    """Which final norm the lens (and the run) applies: "trained" (the model's own), "plain" (the parameter-free
    LayerNorm RunOptions.final_norm=True adds to a model trained without one) or "none" (a model without a
    final norm, or the toggle switched it off) — the rule context.final_norm follows."""
    if wanted is False or (wanted is None and not trained):
        return "none"
    return "trained" if trained else "plain"


class OutputEnd(Protocol):
    """What the lens reads of a model (model.Transformer): its config, the decoder's final norm, where its
    weights live and its output projection h [B, T, d] -> logits [B, T, V]."""

    config: ModelConfig
    dec_norm: LayerNorm | RMSNorm | None
    sinusoid: Tensor  # a buffer: where the weights are

    def project(self, h: Tensor, rec: Recorder | None = None) -> Tensor: ...


class Unembedding:
    """h [T, d] -> logits [T, V]: the decoder's final norm as this run applies it, then the model's own
    output projection. `norm` says which norm: "trained" (the model's), "plain" (the parameter-free LayerNorm
    the final-norm toggle adds to a model trained without one) or "none"."""

    def __init__(self, model: OutputEnd, wanted: bool | None):
        self.project = model.project
        self.model = model  # its device is read at each call: the weights may have moved since (a GPU run)
        self.eps = model.config.layer_norm_eps
        self.vocab = model.config.out_vocab_size
        self.trained = model.dec_norm
        self.norm = lens_norm(self.trained is not None, wanted)

    @property
    def device(self) -> torch.device:
        """Where the weights are now (a CPU trace read after a GPU run: on the GPU)."""
        return self.model.sinusoid.device

    def __call__(self, h: Tensor) -> Tensor:
        off = Recorder(False)
        with torch.no_grad():
            x = h[None].to(self.device)  # [1, T, d] (on the weights' device, wherever the trace is)
            if self.norm == "trained" and self.trained is not None:
                x = self.trained(x, off, "")
            elif self.norm == "plain":
                x = layer_norm(x, None, None, self.eps, off, "")
            return self.project(x, off)[0].to(h.device)  # [T, V]


def residual_names(entries: OrderedDict[str, Entry] | dict, stack: str) -> list[str]:
    """The residual stream entries the lens reads, in order: the stack's input, then each layer's output."""
    found = [names.side_entry(names.stack_side(stack), "input")]
    index = 0
    while names.layer_out(names.layer(stack, index)) in entries:
        found.append(names.layer_out(names.layer(stack, index)))
        index += 1
    return found if found[0] in entries and len(found) > 1 else []


def lens_entries(model: OutputEnd, entries: OrderedDict[str, Entry], options: ResolvedOptions) -> dict:
    """The lens entries of a recorded run of a decoder language model (derived on read); {} for other
    architectures and for a run that recorded no layer outputs."""
    if not names.has_lens(model.config.arch):
        return {}
    stack = "dec"
    rows = tuple(residual_names(entries, stack))
    if not rows:
        return {}
    unembed = Unembedding(model, options.final_norm)
    k = min(LENS_TOP_K, model.config.out_vocab_size)
    return {
        names.LENS_IDS: Derived("lens_ids", rows, (unembed, k)),
        names.LENS_PROBS: Derived("lens_probs", rows, (unembed, k)),
    }


def layer_top_k(h: Tensor, unembed: Unembedding, k: int) -> tuple[Tensor, Tensor]:
    """h [T, d] -> (top-k probabilities [T, k] float32, their ids [T, k] int64), a block of rows at a time."""
    probs, ids = [], []
    vocab = unembed.vocab
    step = max(1, BLOCK_ELEMENTS // vocab)
    for start in range(0, h.shape[0], step):
        logits = unembed(h[start : start + step]).float()  # [rows, V]
        top = logits.topk(k, dim=-1)  # [rows, k]: softmax keeps the order, so its top k are these
        probs.append(torch.exp(top.values - torch.logsumexp(logits, dim=-1, keepdim=True)))  # softmax's values
        ids.append(top.indices)
    return torch.cat(probs), torch.cat(ids)


# The last lens computed: (weak references to its rows, the unembedding, k) -> (probs, ids). The two entries
# are read together; this keeps the second read from redoing every layer's projection.
_last: list[tuple[tuple[weakref.ref, ...], Unembedding, int, Tensor, Tensor]] = []


def lens_top_k(rows: tuple[Tensor, ...], unembed: Unembedding, k: int) -> tuple[Tensor, Tensor]:
    """rows: L + 1 residual streams [T, d] -> (probs [L + 1, T, k], ids [L + 1, T, k])."""
    if _last:
        refs, kept_unembed, kept_k, probs, ids = _last[0]
        same = len(refs) == len(rows) and all(r() is t for r, t in zip(refs, rows, strict=False))
        if same and kept_unembed is unembed and kept_k == k:
            return probs, ids
    per_layer = []
    for h in rows:
        per_layer.append(layer_top_k(h, unembed, k))
        give_back_freed()  # the projections' temporaries (engine/memory.py), or the lens holds ~30 MB a layer more
    probs = torch.stack([p for p, _ in per_layer])  # [L + 1, T, k]
    ids = torch.stack([i for _, i in per_layer])  # [L + 1, T, k]
    _last[:] = [(tuple(weakref.ref(t) for t in rows), unembed, k, probs, ids)]
    return probs, ids


def lens_probs(*values: object) -> Tensor:
    """Derived rule: (rows…, unembedding, k) -> top-k probabilities [L + 1, T, k]."""
    *rows, unembed, k = values
    assert isinstance(unembed, Unembedding) and isinstance(k, int)
    return lens_top_k(tuple(r for r in rows if isinstance(r, Tensor)), unembed, k)[0]


def lens_ids(*values: object) -> Tensor:
    """Derived rule: (rows…, unembedding, k) -> the top-k ids [L + 1, T, k]."""
    *rows, unembed, k = values
    assert isinstance(unembed, Unembedding) and isinstance(k, int)
    return lens_top_k(tuple(r for r in rows if isinstance(r, Tensor)), unembed, k)[1]


register("lens_ids", lens_ids)  # the Trace reads the lens entries through derived.RULES
register("lens_probs", lens_probs)
