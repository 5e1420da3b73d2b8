"""Derived trace entries equal what the forward pass computed.

A run records some entries as rules (engine/derived.py) instead of values. Here the same forward runs twice
on the same input: once with an eager Recorder that keeps every value the forward computed, once with the
ordinary one; every entry must come out the same (names, order, dtype, and the values to 1e-5 of their
size). The ordinary recorder computes each site's context with the fused kernel, whose rounding differs from
the step-by-step weights @ V in the last bits, and every later value inherits that (the first site's values
agree to 1e-6: tests/engine/test_trace_linear.py); each rule redoes the forward's own step-by-step operation.
"""

from __future__ import annotations

import pytest
import torch

from attnlab.engine.derived import Derived
from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder
from tests.support.recorded import finished
from tests.support.tiny import build_tiny_model as make

SRC, TGT = "the black cat sees the dog", "le chat noir"
ARCHS = ("encoder-decoder", "decoder-only", "encoder-only")
OPTIONS = {
    "defaults": RunOptions(),
    "scale off": RunOptions(scale=False),
    "pre-norm": RunOptions(norm="pre"),
    "padding": RunOptions(pad_to=12),
    "custom masks": (
        RunOptions(pad_to=10)
        .with_custom_mask("enc.0.self", [(1, k) for k in range(10)])
        .with_custom_mask("dec.self", [(2, 0), (3, 1)])
        .with_causal("enc.self", True)
    ),
    "residual off, 8 heads": RunOptions(residual=False, n_heads=8, positional=False),
}


# the fused kernel's rounding of one context (≤ 1e-6 of its size) grows a little through the layers after it
# (most with the residual off); the first site's values stay within 1e-6 (test_trace_linear.py)
DRIFT = 1e-5


def run_both(model: LiveModel, options: RunOptions):
    """The same forward recorded lazily (derived entries as rules) and eagerly (every value kept)."""
    lazy = model.trace(SRC, TGT, options)
    src_ids = lazy.device_value("src.ids")[None] if "src.ids" in lazy else None
    tgt_ids = lazy.device_value("tgt.ids")[None] if "tgt.ids" in lazy else None
    pads = {}
    tok = model.src_tokenizer
    if src_ids is not None:
        pads["src_pad"] = src_ids == tok.pad_id
    if tgt_ids is not None:
        pads["tgt_pad"] = tgt_ids == tok.pad_id
    eager = Recorder(True, eager=True)
    with torch.inference_mode():
        logits = model.module(src_ids, tgt_ids, options=options, rec=eager, **pads)
    return lazy, finished(eager, model.config, options), logits[0]


def assert_equal_values(name: str, ours: torch.Tensor, eager: torch.Tensor, tol: float = 1e-6):
    """Same dtype, shape, blocked cells, and values within `tol` times the entry's size (at least 1)."""
    assert ours.dtype == eager.dtype and ours.shape == eager.shape, name
    assert ours.device.type == "cpu", name
    assert torch.equal(torch.isinf(ours), torch.isinf(eager)), f"{name}: the blocked (-inf) cells differ"
    finite = torch.isfinite(eager)
    err = (ours[finite] - eager[finite]).abs().max().item() if finite.any() else 0.0
    size = max(1.0, eager[finite].abs().max().item()) if finite.any() else 1.0
    assert err <= tol * size, f"{name}: derived differs from the forward's value by {err:.2e}"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("label", list(OPTIONS))
def test_every_derived_entry_equals_the_eagerly_recorded_one(arch, label):
    model = make(arch)
    options = OPTIONS[label]
    if arch != "encoder-decoder" and options.custom_masks:  # name only the sites this architecture has
        options = options.replace(
            custom_masks=tuple(
                (s, c) for s, c in options.custom_masks if s.startswith("enc" if arch == "encoder-only" else "dec")
            )
        )
    lazy, eager, logits = run_both(model, options)
    derived = [n for n, v in lazy.entries.items() if isinstance(v, Derived)]
    assert {"enc.0.self.scaled", "enc.0.self.masked", "enc.0.self.concat", "enc.0.norm1.mean"} & set(derived) or {
        "dec.0.self.scaled",
        "dec.0.self.masked",
        "dec.0.self.concat",
        "dec.0.norm1.var",
    } & set(derived)
    # LiveModel adds the tokens and ids before the forward and probs after it
    assert [n for n in lazy.names() if n in eager] == eager.names()
    # (and a decoder LM's logit lens, engine/logit_lens.py: read from the layer outputs,
    # tests/engine/test_logit_lens.py)
    added = {"src.tokens", "src.ids", "tgt.tokens", "tgt.ids", "probs", "lens.ids", "lens.probs"}
    assert {n for n in lazy.names() if n not in eager} <= added
    for name in eager.names():
        value = eager[name]
        if isinstance(value, list):
            assert lazy[name] == value
            continue
        assert_equal_values(name, lazy[name], value, tol=DRIFT)
    probs = torch.softmax(logits / options.temperature, dim=-1)
    assert_equal_values("probs", lazy["probs"], probs, tol=DRIFT)


def test_norm_statistics_equal_a_direct_computation():
    """Independent of the eager path: mean and biased variance of each row of the LayerNorm input."""
    trace = make("encoder-decoder", norm_first=True).trace(SRC, TGT)
    x = trace["enc.1.norm2.in"]  # [S, d]
    torch.testing.assert_close(trace["enc.1.norm2.mean"], x.mean(-1), atol=1e-6, rtol=0)
    torch.testing.assert_close(trace["enc.1.norm2.var"], x.var(-1, unbiased=False), atol=1e-5, rtol=1e-5)


def test_derived_entries_are_named_in_the_trace_and_hold_no_storage():
    trace = make("encoder-decoder").trace(SRC, TGT)
    for step in ("scores", "scaled", "masked", "concat"):
        name = f"dec.1.cross.{step}"
        assert name in trace and isinstance(trace.entries[name], Derived)
    assert isinstance(trace.entries["probs"], Derived) and "probs" in trace
    before = trace.stored_bytes()
    _ = trace["dec.1.cross.masked"]  # reading caches the host value; the stored bytes do not change
    assert trace.stored_bytes() == before


def test_masks_shared_by_layers_are_stored_once():
    trace = make("encoder-decoder").trace(SRC, TGT)
    ptr = {n: trace.entries[n].data_ptr() for n in trace.names() if n.endswith(".mask")}
    assert ptr["enc.0.self.mask"] == ptr["enc.1.self.mask"]
    assert ptr["dec.0.self.mask"] == ptr["dec.1.self.mask"]
    assert trace["enc.0.self.mask"] is trace["enc.1.self.mask"]  # one host copy too


def test_every_derived_entry_is_contiguous_even_with_one_wide_heads():
    """d_k = 1 (as many heads as d_model): the concat's reshape is a column-major view, which crashed the app
    once handed on to Qt (issue 27); every derived entry comes back row-major."""
    model = make("encoder-decoder")
    trace = model.trace(SRC, TGT, RunOptions(n_heads=model.config.d_model))
    derived = [n for n, e in trace.entries.items() if isinstance(e, Derived)]
    assert "dec.1.cross.concat" in derived
    for name in derived:
        assert trace.device_value(name).is_contiguous(), name
        assert trace[name].is_contiguous(), name
