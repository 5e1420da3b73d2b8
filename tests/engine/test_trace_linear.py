"""Traces linear in length (issue 23 item 4): the recording forward computes attention with the fused kernel,
stores Q, K, V, the mask and the context, and derives scores … weights on read, one head or one block of rows
at a time (engine/derived_blocks.py). Checked against an eager recorder that keeps every step's value (the
step-by-step attention_steps path), on tiny models of every architecture and attention mechanism."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attnlab.engine import derived_blocks, layers, names
from attnlab.engine.derived import Derived
from attnlab.engine.options import RunOptions
from tests.engine.test_trace_derived import SRC, TGT, assert_equal_values, run_both
from tests.support.tiny import build_tiny_model as make

MAPS = ("scores", "scaled", "masked", "weights")
BLOCKED_ROW = RunOptions(pad_to=10).with_custom_mask("enc.0.self", [(1, k) for k in range(10)])
CASES = {
    "encoder-decoder": ("encoder-decoder", {}, RunOptions()),
    "decoder-only": ("decoder-only", {}, RunOptions()),
    "encoder-only, padding": ("encoder-only", {}, RunOptions(pad_to=12)),
    "fully blocked row": ("encoder-decoder", {}, BLOCKED_ROW),
    "custom masks, causal encoder": (
        "encoder-decoder",
        {},
        RunOptions(pad_to=10).with_custom_mask("dec.self", [(2, 0), (3, 1)]).with_causal("enc.self", True),
    ),
    "grouped-query": ("decoder-only", {"n_kv_heads": 2, "positional": "rotary", "rotary_layout": "half"}, RunOptions()),
    "grouped-query, 8 heads": ("decoder-only", {"n_kv_heads": 2}, RunOptions(n_heads=8)),
    "sliding window": ("decoder-only", {"sliding_window": 3, "n_kv_heads": 2}, RunOptions()),
    "inverse layer scaling": ("decoder-only", {"attn_scale_inverse_layer": True}, RunOptions()),
    "scale off": ("encoder-decoder", {}, RunOptions(scale=False)),
    "projections off": ("decoder-only", {}, RunOptions(projections=False)),
}


def lazy_and_eager(label: str):
    arch, changes, options = CASES[label]
    return run_both(make(arch, **changes), options)


@pytest.mark.parametrize("label", list(CASES))
def test_maps_and_context_equal_the_step_by_step_values(label):
    lazy, eager, _ = lazy_and_eager(label)
    sites = lazy.sites()
    for site in sites:
        n = names.site_entries(site)
        for step in MAPS:  # never stored: rules on the stored Q, K and mask
            assert isinstance(lazy.entries[getattr(n, step)], Derived), (site, step)
        assert isinstance(lazy.entries[n.context], torch.Tensor)
    first = names.site_entries(sites[0])  # its inputs are the same numbers on both paths
    for step in (*MAPS, "context"):
        assert_equal_values(f"{sites[0]}.{step}", lazy[getattr(first, step)], eager[getattr(first, step)])
    for site in sites[1:]:  # later sites read inputs that inherit the fused kernel's last-bit rounding
        for step in (*MAPS, "context"):
            name = names.site_entry(site, step)
            assert_equal_values(name, lazy[name], eager[name], tol=1e-5)


@pytest.mark.parametrize("kernel_gives", ["its own", "NaN"])
def test_a_fully_blocked_query_gets_zero_weights_and_a_zero_context(monkeypatch, kernel_gives):
    """Whatever the fused kernel makes of a query with every key blocked (the CPU kernel gives zeros, others
    NaN or an average), its context is zero, as attention_steps makes it."""
    if kernel_gives == "NaN":
        fused = torch.nn.functional.scaled_dot_product_attention

        def nan_rows(q, k, v, attn_mask=None, **kw):
            out = fused(q, k, v, attn_mask=attn_mask, **kw)
            if attn_mask is None:
                return out
            return out.masked_fill(torch.isinf(attn_mask).all(-1, keepdim=True), float("nan"))

        monkeypatch.setattr(layers.F, "scaled_dot_product_attention", nan_rows)
    lazy, _, _ = lazy_and_eager("fully blocked row")
    assert torch.isinf(lazy["enc.0.self.mask"][1]).all()
    assert torch.equal(lazy["enc.0.self.weights"][:, 1], torch.zeros_like(lazy["enc.0.self.weights"][:, 1]))
    assert torch.equal(lazy["enc.0.self.context"][:, 1], torch.zeros_like(lazy["enc.0.self.context"][:, 1]))


@pytest.mark.parametrize("label", ["decoder-only", "grouped-query", "sliding window", "fully blocked row"])
def test_derived_weights_times_v_give_the_stored_fused_context(label):
    """The derived weights and the context the fused kernel computed agree: weights @ V (each Q head's
    shared V head) is the stored context to 1e-6."""
    lazy, _, _ = lazy_and_eager(label)
    for site in lazy.sites():
        n = names.site_entries(site)
        weights, v = lazy[n.weights], lazy[n.v]  # [H, Tq, Tk], [H_kv, Tk, dk]
        group = weights.shape[0] // v.shape[0]
        expected = weights @ v.repeat_interleave(group, dim=0)  # [H, Tq, dk]
        torch.testing.assert_close(lazy[n.context], expected, atol=1e-6, rtol=0)


class LargestTensor(TorchDispatchMode):
    """Watches every operation's outputs; `largest` is the most elements any one tensor had."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


@pytest.mark.parametrize("changes", [{}, {"n_kv_heads": 2}], ids=["mha", "gqa"])
def test_the_recording_forward_makes_no_map_of_all_heads(changes):
    """No tensor of H·T·T elements (a site's maps for all heads) exists while a run is recorded; the masks
    ([T, T], one per site kind) are the largest. The eager step-by-step path does make them."""
    model = make("decoder-only", **changes, max_len=64)
    text = " ".join(["the black cat sees the dog"] * 5)
    watch = LargestTensor()
    with watch:
        trace = model.trace(text)
    T = len(trace["tgt.tokens"])
    H = trace.n_heads
    assert T > 20 and H > 1
    assert watch.largest < H * T * T
    assert trace["dec.0.self.weights"].shape == (H, T, T)


def test_a_big_map_is_read_block_by_block_and_equals_the_whole(monkeypatch):
    """Past BLOCK_BYTES a map is computed one head's block of rows at a time: one head read alone and every
    head read at once equal the step-by-step values, and no block is larger than the limit."""
    lazy, eager, _ = lazy_and_eager("grouped-query")
    monkeypatch.setattr(derived_blocks, "BLOCK_BYTES", 64)  # 64 bytes: a few rows of the tiny model's maps
    sizes: list[int] = []
    block = derived_blocks.block

    def watched(trace, name, heads, rows):
        value = block(trace, name, heads, rows)
        sizes.append(value.numel() * value.element_size())
        return value

    monkeypatch.setattr(derived_blocks, "block", watched)
    site = lazy.sites()[-1]
    for step in MAPS:
        name = names.site_entry(site, step)
        assert derived_blocks.is_big_map(lazy, name)
        H = eager[name].shape[0]
        for h in range(H):
            assert_equal_values(name, lazy.read(name, h), eager[name][h], tol=1e-5)
        assert_equal_values(name, lazy[name], eager[name], tol=1e-5)
    Tk = eager[names.site_entry(site, "weights")].shape[-1]
    assert sizes and max(sizes) <= max(64, Tk * 4)  # one row of one head at most


def test_an_ablated_site_keeps_the_step_by_step_path(monkeypatch):
    model = make("decoder-only")
    calls: list[str] = []
    steps = layers.attention_steps
    monkeypatch.setattr(
        layers, "attention_steps", lambda *a, **k: calls.append(a[6]) or steps(*a, **k)
    )  # a[6]: the site's prefix
    trace = model.trace(SRC, TGT, RunOptions().with_ablation("dec.1.self", 0, "zero"))
    assert [prefix for prefix in calls if prefix] == ["dec.1.self"]  # "": a context computed, nothing recorded
    assert torch.equal(trace["dec.1.self.context"][0], torch.zeros_like(trace["dec.1.self.context"][0]))


def test_a_new_input_leaves_no_earlier_trace_alive_in_the_model():
    """One trace at a time: once nothing outside holds the first trace, the model keeps none of its tensors."""
    model = make("decoder-only")
    first = model.trace("the black cat")
    gone = weakref.ref(first)
    q = weakref.ref(first.entries["dec.0.self.q"])
    del first
    model.trace("the small dog sees the cat")
    gc.collect()
    assert gone() is None and q() is None
