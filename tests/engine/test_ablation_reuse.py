"""A temperature change with a head ablated reuses both runs the session made: the ablated trace and its
un-ablated baseline (present/ablation.py), and the result equals full re-runs (engine/live.py keeps the last
recorded and the last fast run)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.present.ablation import BASELINE_PROBS, baseline_probs
from attnlab.session import Session

TEXTS = ["the black cat sees the small dog", "le chat noir voit le petit chien"]
SRC, TGT = "the black cat sees the dog", "le chat noir"


def make() -> LiveModel:
    torch.manual_seed(0)
    tok = WordTokenizer.train(TEXTS)
    cfg = ModelConfig(
        src_vocab_size=tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        max_len=32,
    )
    return LiveModel(Transformer(cfg), tok, tok)


def assert_same(a, b):
    """Every entry of two traces equal to the last bit (-inf cells in the same places)."""
    assert a.names() == b.names()
    for name in a.names():
        x, y = a[name], b[name]
        if isinstance(x, list):
            assert x == y, name
        else:
            assert torch.equal(x.isinf(), y.isinf()) and torch.equal(x.nan_to_num(), y.nan_to_num()), name


ABLATED = RunOptions(ablate=(("enc.1.self", 1, "zero"), ("dec.0.cross", 2, "mean")))


def counting_forwards(model: LiveModel) -> list[int]:
    """A list that grows by one each time the model's module runs a forward pass."""
    calls: list[int] = []
    model.module.register_forward_pre_hook(lambda *_: calls.append(1))
    return calls


def test_a_temperature_change_with_an_ablation_reuses_the_ablated_run_and_its_baseline():
    """With a head ablated, the session runs the un-ablated baseline (fast path) and then the ablated trace;
    at another temperature both come back from the runs kept, not computed again, and equal full re-runs."""
    model = make()
    before = baseline_probs(model, SRC, TGT, ABLATED)
    first = model.trace(SRC, TGT, ABLATED)
    calls = counting_forwards(model)
    hotter = ABLATED.replace(temperature=2.5)
    hot_before = baseline_probs(model, SRC, TGT, hotter)
    hot = model.trace(SRC, TGT, hotter)
    assert not calls  # neither model ran again
    assert "reused" in hot.info and hot.options.temperature == 2.5
    assert all(hot.entries[n] is v for n, v in first.entries.items() if n != "probs")
    fresh = make()  # never ran: every number computed afresh at the new temperature
    torch.testing.assert_close(hot_before, baseline_probs(fresh, SRC, TGT, hotter), rtol=0, atol=0)
    assert_same(hot, fresh.trace(SRC, TGT, hotter))
    assert not torch.equal(hot_before, before) and not torch.equal(hot["probs"], first["probs"])


def test_the_kept_baseline_goes_with_the_text_and_never_stands_in_for_a_recorded_run():
    model = make()
    baseline_probs(model, SRC, TGT, ABLATED)
    model.trace(SRC, TGT, ABLATED)
    calls = counting_forwards(model)
    other = model.trace(SRC, "le chat", ABLATED.replace(temperature=2.0))  # other text: a full run
    assert calls and "reused" not in other.info and model.reuse.runs.keys() == {True}  # the old baseline is gone
    plain = model.trace(SRC, TGT, RunOptions(record=False, temperature=2.0))
    assert "reused" not in plain.info and "enc.0.self.q" not in plain


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


def test_the_session_changes_the_temperature_of_an_ablated_run_without_running_the_model(qtbot, session):
    model = make()
    with qtbot.waitSignal(session.traceReady, timeout=10000):
        session.set_model(model, SRC, TGT)
    with qtbot.waitSignal(session.traceReady, timeout=10000):
        session.set_options(ABLATED)
    ablated = session.trace
    calls = counting_forwards(model)
    with qtbot.waitSignal(session.traceReady, timeout=10000):
        session.set_options(ABLATED.replace(temperature=3.0))
    assert not calls and session.trace is not ablated and "reused" in session.trace.info
    fresh = Session()  # runs on a worker thread configured like the first session's: the same kernels
    try:
        with qtbot.waitSignal(fresh.traceReady, timeout=10000):
            fresh.set_model(make(), SRC, TGT)
        with qtbot.waitSignal(fresh.traceReady, timeout=10000):
            fresh.set_options(session.options)  # straight to the hotter ablated run: computed in full
        assert "reused" not in fresh.trace.info
        expected = fresh.trace.info[BASELINE_PROBS]
        torch.testing.assert_close(session.trace.info[BASELINE_PROBS], expected, rtol=0, atol=0)
        assert_same(session.trace, fresh.trace)
    finally:
        fresh.shutdown()
