"""Facts read off a Trace for the panels and the explanations (Qt-free): names, token labels, toggles."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnlab.engine.trace import Trace

SPECIAL_TOKENS = ("<s>", "</s>", "<pad>", "<unk>")
_SITE_KIND_NAMES = {"self": "self-attention", "cross": "cross-attention"}


def missing(trace: Trace, names: Sequence[str]) -> list[str]:
    """The names this panel needs that the trace does not hold."""
    return [n for n in names if n not in trace]


def missing_message(what: str, names: Sequence[str]) -> str:
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return (f"{what} is not in this run ({shown} was not recorded). It may be switched off, not part of "
            f"this model, or the run was made on the fast path without recording.")


def array(trace: Trace, name: str) -> np.ndarray:
    """The trace entry as a float32 numpy array (no copy when it already is one)."""
    return np.asarray(trace.numpy(name), dtype=np.float32)


def tokens(trace: Trace, side: str, n: int) -> list[str] | None:
    """Token strings of `side` ("src"/"tgt") when there are exactly `n` of them, else None (numbers shown)."""
    toks = trace.get(f"{side}.tokens")
    if toks is None or len(toks) != n:
        return None
    return [str(t) for t in toks]


def site_sides(site: str) -> tuple[str, str]:
    """(query side, key side) of an attention site: enc.* reads src both ways, dec.self tgt both ways,
    dec.cross queries from tgt and keys/values from src."""
    stack, _layer, kind = site.split(".")
    q_side = "src" if stack == "enc" else "tgt"
    k_side = "src" if (stack == "enc" or kind == "cross") else "tgt"
    return q_side, k_side


def site_name(site: str) -> str:
    """'dec.1.cross' -> 'decoder layer 2 cross-attention'."""
    stack, layer, kind = site.split(".")
    where = "encoder" if stack == "enc" else "decoder"
    return f"{where} layer {int(layer) + 1} {_SITE_KIND_NAMES.get(kind, kind)}"


def layer_name(layer: str) -> str:
    """'enc.0' -> 'encoder layer 1'."""
    stack, index = layer.split(".")
    return f"{'encoder' if stack == 'enc' else 'decoder'} layer {int(index) + 1}"


def side_name(side: str) -> str:
    return "source" if side == "src" else "decoder input"


def layer_side(layer: str) -> str:
    """Which token side a layer's rows belong to: encoder layers read src, decoder layers tgt."""
    return "src" if layer.startswith("enc") else "tgt"


def sublayer_output(trace: Trace, layer: str, n: int) -> str:
    """Name of the output of the sub-layer wrapped by add & norm n of `layer` (attention or FFN)."""
    order = ["self"]
    if layer.startswith("dec") and f"{layer}.cross.out" in trace:
        order.append("cross")
    order.append("ffn")
    part = order[min(n, len(order)) - 1]
    return f"{layer}.{part}.out"


def residual_is_off(trace: Trace, layer: str, n: int) -> bool:
    """True when the run skipped the x + sublayer(x) connection (the sum equals the sub-layer output)."""
    resid, sub = f"{layer}.resid{n}", sublayer_output(trace, layer, n)
    if resid not in trace or sub not in trace:
        return False
    return bool(np.allclose(trace.numpy(resid), trace.numpy(sub), atol=1e-6))


def scaling_off(trace: Trace, site: str) -> bool:
    """True when the run skipped ÷√dₖ (the scaled scores equal the raw ones)."""
    a, b = f"{site}.scores", f"{site}.scaled"
    if a not in trace or b not in trace:
        return False
    return bool(np.allclose(trace.numpy(a), trace.numpy(b)))
