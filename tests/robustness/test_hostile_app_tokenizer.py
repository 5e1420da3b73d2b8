"""A tokenizer that backtracks for minutes never freezes the window (issue 27): with the app's time limit on,
Hugging Face tokenizers encode in a child process (engine/tokenizer_process.py); the ids are the in-process
ids, a tokenizer past the limit is stopped and reported in one line, and the GUI thread keeps running
meanwhile (a QTimer keeps ticking: in-process, the library holds the Python lock and nothing would tick)."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time

import pytest
from PySide6.QtCore import QTimer
from tokenizers import Regex, models, pre_tokenizers
from tokenizers import Tokenizer as HF

from attnlab.checkpoints import random_model
from attnlab.engine import tokenizer_process
from attnlab.engine.tokenizer import BPETokenizer, TokenizerError
from attnlab.session import Session
from tests.support.hostile_files import TINY

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the child process is waited on with select (POSIX)")
WAIT = 20000
SLOW_REGEX = r"a*a*a*(?=\s)"  # O(n^4) backtracking below the retry limit: 500 letters take over 100 s
SLOW_TEXT = "a" * 400  # minutes in-process


def slow_tokenizer() -> BPETokenizer:
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "a": 4, "the": 5, "cat": 6}
    hf = HF(models.WordLevel(vocab, unk_token="<unk>"))
    split = pre_tokenizers.Split(Regex(SLOW_REGEX), behavior="isolated")
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), split])
    return BPETokenizer(hf)


@pytest.fixture
def time_limit(monkeypatch):
    """The app's setting, for one test: encode in a child, stopped after 1.5 s."""
    monkeypatch.setattr(tokenizer_process, "_timeout_s", None)
    tokenizer_process.set_encode_timeout(1.5)
    yield 1.5
    tokenizer_process.set_encode_timeout(None)


def test_the_child_process_gives_the_in_process_ids(time_limit):
    tok = BPETokenizer.train(["the black cat sees the small dog", "le chat noir voit le petit chien"], 120)
    texts = ["the black cat", "  le   chat\tnoir  ", "unknown wörds ✓ and the cat", "", "a" * 3000 + " cat"]
    isolated = [tok.encode(t) for t in texts]
    tokenizer_process.set_encode_timeout(None)
    assert isolated == [tok.encode(t) for t in texts]


def test_a_tokenizer_past_the_limit_is_stopped_in_one_line_and_the_next_text_works(time_limit):
    tok = slow_tokenizer()
    start = time.perf_counter()
    with pytest.raises(TokenizerError) as refused:
        tok.encode(SLOW_TEXT)
    assert time.perf_counter() - start < time_limit + 5
    message = str(refused.value)
    assert "took longer than 1.5 s" in message and "\n" not in message
    assert tok.encode("the cat") == (["the", "cat"], [5, 6])  # a new child for the next text


def test_the_window_keeps_ticking_while_a_hostile_tokenizer_runs(qtbot, time_limit):
    session = Session()
    model = random_model(TINY, tokenizer=slow_tokenizer())
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: model, src="the cat")
    ticks = []
    timer = QTimer(interval=20)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        session.set_src(SLOW_TEXT, debounce=False)
    timer.stop()
    assert "took longer than" in failed.args[0]
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert len(ticks) >= 20 and max(gaps) < 0.5, (len(ticks), max(gaps, default=None))  # never frozen
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src("cat the", debounce=False)
    assert session.trace["src.tokens"][:2] == ["cat", "the"]
    session.shutdown()


def test_without_the_limit_nothing_runs_in_a_child(monkeypatch):
    monkeypatch.setattr(tokenizer_process, "_timeout_s", None)
    started = []
    monkeypatch.setattr(tokenizer_process, "_Child", lambda *a: started.append(a))
    assert slow_tokenizer().encode("the cat")[1] == [5, 6] and not started


def test_cancel_stops_a_tokenizer_at_once(qtbot, time_limit, monkeypatch):
    monkeypatch.setattr(tokenizer_process, "_timeout_s", 60.0)  # only Cancel can end it soon
    session = Session()
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: random_model(TINY, tokenizer=slow_tokenizer()), src="the cat")
    session.set_src(SLOW_TEXT, debounce=False)
    qtbot.waitUntil(lambda: any(c.proc.poll() is None for c in tokenizer_process._children.values()), timeout=WAIT)
    qtbot.wait(200)  # the child is busy with the slow text
    start = time.perf_counter()
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        assert not session.cancel()  # no load to drop; the tokenizer is stopped
    assert time.perf_counter() - start < 5
    assert "stopped by Cancel" in failed.args[0] and "\n" not in failed.args[0]
    session.shutdown()
