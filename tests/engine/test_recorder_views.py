"""A tensor recorded under two names in a row (a residual sum that is the next norm's input, a norm's output
that is the layer's) gets one first-sequence view (engine/trace.py `Recorder._last`): every entry holds the
values a fresh `value[0]` per name would, bit for bit."""

from __future__ import annotations

import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder
from tests.support.recorded import finished


def test_one_tensor_recorded_twice_in_a_row_is_one_view_of_its_first_sequence():
    x = torch.randn(2, 3, 4)  # [B, T, d], two sequences
    twin = x.clone()  # the same numbers, another tensor
    rec = Recorder(True)
    rec.add((("a", x),))
    rec("b", x)
    rec.add((("c", x), ("d", twin), ("e", x)))
    entries = rec.entries()
    assert entries["a"] is entries["b"] is entries["c"]
    assert entries["d"] is not entries["c"] and entries["e"] is not entries["d"]
    for name in "abcde":
        assert torch.equal(entries[name], x[0]), name
    assert rec._last.numel() == 0  # finish() lets the last batched tensor go


def test_a_later_in_place_change_shows_in_every_name_as_before():
    """The shared view is a view, as `value[0]` was: an in-place change after recording shows alike."""
    x = torch.zeros(1, 2, 2)
    rec = Recorder(True)
    rec.add((("a", x),))
    rec("b", x)
    x.add_(1.0)
    entries = rec.entries()
    assert torch.equal(entries["a"], torch.ones(2, 2)) and torch.equal(entries["b"], torch.ones(2, 2))


def _run(eager: bool, norm_first: bool) -> dict[str, torch.Tensor]:
    torch.manual_seed(3)
    cfg = ModelConfig(src_vocab_size=30, tgt_vocab_size=30, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2,
                      n_decoder_layers=2, max_len=16, final_norm=True, norm_first=norm_first)  # fmt: skip
    model = Transformer(cfg).eval()
    src, tgt = torch.randint(4, 30, (1, 7)), torch.randint(4, 30, (1, 5))
    rec = Recorder(True, eager=eager)
    with torch.inference_mode():
        model(src, tgt, options=RunOptions(record=True), rec=rec)
    trace = finished(rec, cfg)
    return {n: trace.device_value(n) for n in trace.entries if not isinstance(trace.entries[n], list)}


def test_shared_views_in_a_run_hold_what_the_forward_computed():
    for norm_first in (False, True):
        lazy = _run(eager=False, norm_first=norm_first)
        eager = _run(eager=True, norm_first=norm_first)  # every step kept as the forward computed it
        assert lazy.keys() == eager.keys()
        for name, value in eager.items():  # the fused kernel's context: the last bits may differ (and what follows)
            torch.testing.assert_close(lazy[name], value, atol=1e-5, rtol=1e-5, equal_nan=True, msg=name)
        assert lazy["enc.1.norm2.in"] is lazy["enc.1.resid1" if norm_first else "enc.1.resid2"]
        assert lazy["enc.1.out"] is lazy["enc.1.resid2" if norm_first else "enc.1.norm2.out"]
