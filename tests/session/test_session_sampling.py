"""Generate presses in the app draw like LiveModel.generate when the run samples (issue 35): presses from a
prompt follow one generator at the seed, so they give generate()'s tokens; a text change starts it again."""

import pytest

from attnlab.engine.options import RunOptions
from attnlab.session import Session

WAIT = 10000
OPTIONS = RunOptions(sample=True, temperature=2.0, top_k=0, top_p=0.98, seed=4)


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


def presses(qtbot, session, n: int) -> list[int]:
    for _ in range(n):
        with qtbot.waitSignal(session.traceReady, timeout=WAIT):
            session.generate_next()
    return [int(i) for i in session.trace["tgt.ids"]]


def test_presses_draw_generates_tokens_and_start_again_after_an_edit(qtbot, session, generating_model):
    model = generating_model()
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_model(model, "the black cat sees the dog", "")
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_options(OPTIONS)
    ids = presses(qtbot, session, 4)
    steps = list(model.generate("the black cat sees the dog", max_new_tokens=4, options=OPTIONS))
    assert [s.info["next_id"] for s in steps] == ids[-4:]
    greedy = [int(model.next_token(s)[0]) for s in steps]
    assert greedy != ids[-4:]  # T = 2 draws, not the argmax each time (fixed by the seed)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_tgt("", debounce=False)
    assert presses(qtbot, session, 4) == ids  # the same seed from the same start: the same tokens
