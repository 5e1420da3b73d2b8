"""Generate in the app runs the model's cached generation (engine/generation.py): each press is one step
against the KV cache, kept for the timeline; presses made while a step runs are each a cached step, and the
whole sequence is traced once when they are done. The tokens are LiveModel.generate's."""

import pytest

from attnlab.engine import names
from attnlab.session import Session

WAIT = 10000


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


@pytest.mark.parametrize("arch", ["decoder-only", "encoder-decoder"])
def test_presses_are_cached_steps_and_one_whole_trace(qtbot, session, generating_model, arch):
    model = generating_model(arch)
    src, tgt = "the black cat sees the dog", "" if arch == "decoder-only" else "le"
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_model(model, src, tgt)
    whole_runs = []
    traced = model.trace
    model.trace = lambda *a, **k: whole_runs.append(1) or traced(*a, **k)  # counts the whole-sequence runs
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        for _ in range(3):  # the 2nd and 3rd arrive while the 1st step runs: each a cached step
            session.generate_next()
    qtbot.waitUntil(lambda: not session.busy, timeout=WAIT)
    steps = session.generation.steps
    assert len(steps) == 3 and all(step.info["cached"] for step in steps)
    assert len(whole_runs) == 1  # one whole trace after the three steps, not one per press
    expected = list(model.generate(src, tgt if arch != "decoder-only" else "", max_new_tokens=3))
    assert [s.info["next_id"] for s in steps] == [s.info["next_id"] for s in expected]
    ids = [int(i) for i in session.trace[names.side_entry("tgt", "ids")]]
    assert ids[-3:] == [s.info["next_id"] for s in expected]  # the whole trace holds the generated tokens
    positions = session.timeline()
    assert positions == [steps[0].info["rows"][1] - 1 + k for k in range(3)]


def test_an_edit_ends_the_timeline(qtbot, session, generating_model):
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_model(generating_model("decoder-only"), "the black cat", "")
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.generate_next()
    assert len(session.timeline()) == 1
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src("the small dog", debounce=False)
    assert session.timeline() == []
