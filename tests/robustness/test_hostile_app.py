"""Hostile input in the app (issue 14): a job that raises anything (even a Rust panic from a tokenizer) ends in
a message and the session is free again; a refused checkpoint is the "Cannot load …" dialog; a megabyte
sentence is cut the same way for the box, the trace and the settings."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


import pytest
from PySide6.QtWidgets import QMessageBox
from tokenizers import Regex, models, pre_tokenizers
from tokenizers import Tokenizer as HF

from attnlab.checkpoints import load_checkpoint, random_model, save_checkpoint
from attnlab.engine.tokenizer import BPETokenizer, TokenizerError
from attnlab.limits import MAX_SENTENCE_CHARS
from attnlab.session import Session
from attnlab.ui.window import app as appsettings
from tests.support.hostile_files import TINY, deep_list_pickle, torch_zip_with_pickle
from tests.support.tiny import build_tiny_model as tiny_model

WAIT = 15000


def panicking_tokenizer(pattern: str, words_first: bool = True) -> BPETokenizer:
    """A Hugging Face tokenizer whose pre-tokenizer regex backtracks: the Rust regex engine gives up and
    panics (pyo3_runtime.PanicException, a BaseException) on input that triggers it. `words_first` splits
    at spaces before the regex sees the text (so only long words trigger it)."""
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "a": 4, "the": 5, "cat": 6}
    hf = HF(models.WordLevel(vocab, unk_token="<unk>"))
    split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), split]) if words_first else split
    return BPETokenizer(hf)


LONG_A = "a" * 300  # "(a+)+b" panics on this (retry limit), not on short words


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def test_the_tokenizer_panic_becomes_a_tokenizer_error():
    tok = panicking_tokenizer("(a+)+b")
    assert tok.encode("the cat")[0] == ["the", "cat"]
    with pytest.raises(TokenizerError, match="the tokenizer failed to split this text"):
        tok.encode(LONG_A)
    assert isinstance(TokenizerError("x"), ValueError)


def test_a_job_raising_a_base_exception_ends_in_a_message(qtbot, session):
    class Panic(BaseException):
        pass

    def job():
        raise Panic("the worker blew up")

    with qtbot.waitSignal(session.modelFailed, timeout=WAIT) as failed:
        session.load_async(job)
    assert failed.args[0] == "Panic: the worker blew up"
    qtbot.waitUntil(lambda: not session.busy, timeout=WAIT)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):  # the session still works
        session.load_async(lambda: tiny_model())


def test_a_long_sentence_that_makes_the_tokenizer_panic_is_a_message_not_a_wedge(qtbot, session):
    model = random_model(TINY, tokenizer=panicking_tokenizer("(a+)+b"))
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: model, src="the cat")
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        session.set_src(LONG_A, debounce=False)
    assert "tokenizer failed" in failed.args[0]
    qtbot.waitUntil(lambda: not session.busy, timeout=WAIT)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src("cat the", debounce=False)
    assert session.trace["src.tokens"][:2] == ["cat", "the"]


def test_a_checkpoint_whose_tokenizer_always_panics_fails_to_open_and_the_next_one_opens(qtbot, session, tmp_path):
    tokenizer = panicking_tokenizer("(.+)+[^\\s\\S]", words_first=False)  # panics on any sentence
    path = save_checkpoint(random_model(TINY, tokenizer=tokenizer), tmp_path / "panics.safetensors")
    with qtbot.waitSignal(session.modelFailed, timeout=WAIT) as failed:  # on its example sentence
        session.load_async(lambda: load_checkpoint(path))
    assert "tokenizer failed" in failed.args[0]
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: tiny_model())
    assert session.model is not None and not isinstance(session.model.src_tokenizer, BPETokenizer)


@pytest.fixture
def win(open_window):
    return open_window(tiny_model())


def test_a_deep_pickle_opened_in_the_app_is_the_cannot_load_dialog(qtbot, win, tmp_path, monkeypatch):
    path = torch_zip_with_pickle(tmp_path / "deep.pt", deep_list_pickle(20_000))
    opened = win.session.model
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]))
    with qtbot.waitSignal(win.session.modelFailed, timeout=WAIT):
        win.open_checkpoint(str(path))
    assert len(warnings) == 1 and warnings[0].startswith("Cannot load the checkpoint")
    assert "levels deep" in warnings[0] and "RecursionError" not in warnings[0]
    assert win.session.model is opened


def test_a_megabyte_sentence_is_cut_alike_in_the_box_the_trace_and_the_settings(qtbot, win):
    huge = "the cat " * 131_072  # 1 MB
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_src(huge, debounce=False)
        win.session.textsChanged.emit()
    box = win.inputs.src.text()
    assert win.inputs.src.maxLength() == MAX_SENTENCE_CHARS and box == huge[:MAX_SENTENCE_CHARS]
    assert any(f"only the first {MAX_SENTENCE_CHARS:,} were read" in n for n in win.session.trace.notices)
    assert len(win.session.trace["src.tokens"]) == win.session.model.config.max_len
    win.close()
    stored = appsettings.make_settings().value(appsettings.LAST_SENTENCE)
    assert stored == huge[:MAX_SENTENCE_CHARS]
