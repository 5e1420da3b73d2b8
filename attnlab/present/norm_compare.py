"""LayerNorm vs BatchNorm on the same activations (Qt-free): the numbers behind the "LayerNorm vs BatchNorm" stage.

The activations are the input of an add & norm step, x [T tokens, d features]. LayerNorm normalises each token
across its d features (statistics per row); BatchNorm normalises each feature across the batch — here the
tokens of the sentence (statistics per column). Both are shown without their learned γ, β, so only the
statistics differ. `batchnorm_by_length` shrinks the "batch" to the first L tokens: a token's BatchNorm output
changes with its neighbours, its LayerNorm output does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import names
from attnlab.present.facts import array

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

EPS = 1e-5  # the ε of both norms (torch's default for LayerNorm and BatchNorm)


def layer_norm(x: np.ndarray, eps: float = EPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(out [T, d], mean [T], var [T]): each token normalised across its features (biased variance)."""
    mean = x.mean(axis=1)  # [T]
    var = x.var(axis=1)  # [T]
    return (x - mean[:, None]) / np.sqrt(var[:, None] + eps), mean, var


def batch_norm(x: np.ndarray, eps: float = EPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(out [T, d], mean [d], var [d]): each feature normalised across the tokens (training-mode statistics)."""
    mean = x.mean(axis=0)  # [d]
    var = x.var(axis=0)  # [d]
    return (x - mean[None, :]) / np.sqrt(var[None, :] + eps), mean, var


@dataclass(frozen=True)
class NormComparison:
    x: np.ndarray  # [T, d] the activations both norms read
    ln_out: np.ndarray  # [T, d]
    ln_mean: np.ndarray  # [T] one mean per token
    ln_var: np.ndarray  # [T]
    bn_out: np.ndarray  # [T, d]
    bn_mean: np.ndarray  # [d] one mean per feature
    bn_var: np.ndarray  # [d]


def compare_norms(x: np.ndarray, eps: float = EPS) -> NormComparison:
    """LayerNorm and BatchNorm (γ = 1, β = 0) of the same activations x [T, d]."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"expected activations [tokens, features], got shape {x.shape}")
    ln = layer_norm(x, eps)
    bn = batch_norm(x, eps)
    return NormComparison(x, *ln, *bn)


def norm_input(trace: Trace, layer: str, n: int) -> np.ndarray:
    """The activations add & norm n of `layer` normalises: [T, d]."""
    return array(trace, names.norm_entry(names.norm(layer, n), "in"))


@dataclass(frozen=True)
class LengthSweep:
    token: int
    lengths: np.ndarray  # [L] batch sizes: the first L tokens form the batch
    ln: np.ndarray  # [L, d] LayerNorm output of `token` for each batch (the same every time)
    bn: np.ndarray  # [L, d] BatchNorm output of `token` for each batch
    ln_change: np.ndarray  # [L] max |change| of the LayerNorm output against the whole sentence's
    bn_change: np.ndarray  # [L] the same for BatchNorm


def batchnorm_by_length(x: np.ndarray, token: int, eps: float = EPS) -> LengthSweep:
    """Normalise token `token` of x [T, d] with the batch cut to the first L = token+1 … T tokens."""
    x = np.asarray(x, dtype=np.float64)
    t = x.shape[0]
    if not 0 <= token < t:
        raise ValueError(f"token {token} is not in a sentence of {t} tokens")
    lengths = np.arange(token + 1, t + 1)  # [L]
    ln = np.stack([layer_norm(x[:n], eps)[0][token] for n in lengths])  # [L, d]
    bn = np.stack([batch_norm(x[:n], eps)[0][token] for n in lengths])  # [L, d]
    return LengthSweep(token, lengths, ln, bn, np.abs(ln - ln[-1]).max(axis=1), np.abs(bn - bn[-1]).max(axis=1))
