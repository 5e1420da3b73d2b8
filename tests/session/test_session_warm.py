"""The session's worker computes what the shown panel reads first (derived entries included), so the GUI
thread, when the trace arrives, only reads cached host copies."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
import torch

from attnlab.engine.derived import Derived
from attnlab.engine.options import RunOptions
from attnlab.present.stages import stages_for, warm_entries, warm_up
from attnlab.session import Session
from tests.engine.test_trace_toggles import SRC, TGT
from tests.support.tiny import build_tiny_model as make


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


@pytest.mark.parametrize("key", ["dec.1.cross.weights", "enc.0.norm1", "enc.1.ffn", "dec.0.self.masked"])
def test_a_new_trace_arrives_with_the_shown_panels_entries_on_the_host(qtbot, session, key):
    model = make()
    with qtbot.waitSignal(session.traceReady, timeout=20000):
        session.set_model(model, SRC, TGT)
    session.set_stage(key)
    with qtbot.waitSignal(session.traceReady, timeout=20000) as ready:
        session.update_options(scale=False)
    trace = ready.args[0]
    stage = next(s for s in stages_for(trace) if s.key == key)
    wanted = [n for n in warm_entries(stage) if n in trace]
    assert wanted and any(isinstance(trace.entries[n], Derived) for n in wanted)
    assert all(n in trace._host for n in wanted)
    fresh = make().trace(SRC, TGT, RunOptions(scale=False))  # on this thread (another thread count: last bits)
    for n in wanted:
        torch.testing.assert_close(trace[n], fresh[n], equal_nan=True, msg=n)


def test_warm_up_computes_a_small_output_table_on_the_worker():
    """The bars and the shapes line read the whole [T, V] table: a small one's softmax is done off the GUI thread."""
    trace = make().trace(SRC, TGT, RunOptions(temperature=2.0))
    warm_up(trace, "out.probs")
    assert "probs" in trace._host
    logits = trace["logits"]  # [T, V]
    torch.testing.assert_close(trace._host["probs"], torch.softmax(logits / 2.0, dim=-1))


def test_warm_up_leaves_a_large_output_table_alone(monkeypatch):
    import attnlab.present.stages as stages

    monkeypatch.setattr(stages, "OUTPUT_WARM_LIMIT", 10)  # every real [T, V] is larger than this
    trace = make().trace(SRC, TGT, RunOptions())
    warm_up(trace, "out.probs")
    assert "probs" not in trace._host and "logits" not in trace._host


def test_the_next_token_after_a_padded_decoder_input_is_read_from_its_last_real_row():
    from attnlab.present.texts import next_token, real_length

    model = make()
    trace = model.trace(SRC, TGT, RunOptions(pad_to=12))
    last = real_length(trace["tgt.tokens"]) - 1
    assert last < len(trace["tgt.tokens"]) - 1  # padding follows it
    token_id, piece = next_token(model, trace)
    assert token_id == int(trace["probs"][last].argmax()) and piece == model.tgt_tokenizer.id_to_token(token_id)
