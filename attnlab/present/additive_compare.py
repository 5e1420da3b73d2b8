"""Additive (Bahdanau) alignment beside the Transformer's cross-attention for one sentence (Qt-free).

Each model translates the sentence greedily. Row t of each matrix is the output step that produced output
token t (the last row the one that produced </s>); columns are the source tokens (pieces + </s>), the same for
both models since they share one tokenizer. The GRU model has one alignment per step; the Transformer has one
per layer and head — shown here for one decoder layer, averaged over its heads (or one head).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names

if TYPE_CHECKING:
    from attnlab.checkpoints.additive import AdditiveModel
    from attnlab.engine.live import LiveModel


@dataclass(frozen=True)
class Alignment:
    rows: list[str]  # output tokens, one per step
    cols: list[str]  # source tokens
    matrix: np.ndarray  # [len(rows), len(cols)], each row sums to 1
    text: str  # the translation


def additive_alignment(model: AdditiveModel, text: str) -> Alignment:
    result = model.translate(text)
    return Alignment(result.output_tokens, result.source_tokens, result.alignment.numpy(), result.text)


def cross_attention_alignment(model: LiveModel, text: str, layer: int = -1, head: int | None = None) -> Alignment:
    """The Transformer's greedy translation and the cross-attention that produced each of its tokens:
    decoder layer `layer` (negative counts from the last), head `head` or the mean over heads."""
    out_text = model.translate(text)
    ids = model.tokenizer("tgt").encode(out_text)[1] if out_text else []
    trace = model.trace(src=text, tgt=list(ids))
    n_layers = model.config.n_decoder_layers
    index = layer % n_layers
    weights = trace.numpy(names.site_entry(names.site(names.layer("dec", index), "cross"), "weights"))  # [H, T, S]
    matrix = weights.mean(axis=0) if head is None else weights[head]  # [T, S]
    tgt_tokens = [str(t) for t in trace[names.side_entry("tgt", "tokens")]]  # <s> + pieces
    rows = tgt_tokens[1:] + ["</s>"]  # decoder position t predicts token t + 1
    return Alignment(rows, [str(t) for t in trace[names.side_entry("src", "tokens")]], np.asarray(matrix), out_text)
