"""The decoder input follows the sentence (issue 32, item 2): a decoder input the model or a demo wrote
becomes the model's own greedy translation of a new source sentence; one the person typed is kept, and the
banner names the sentence it was written for."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine.config import ModelConfig
from attnlab.present.decoder_input import FOLLOWED, WRITTEN_FOR, DecoderInput, written_for_banner
from attnlab.session import Session

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py

WAIT = 20000
FIRST, SECOND = "the black cat sees the dog", "dog bites man"


def greedy_ids(model, src: str) -> list[int]:
    """The decoder ids of the engine's own greedy decoding of `src` (LiveModel.generate), without <s>."""
    *_, last = model.generate(src, max_new_tokens=20)
    return list(model.tokenizer("tgt").encode(last.info["generated"])[1])


def decoder_ids(trace) -> list[int]:
    """The decoder input's ids in a trace, without the start token."""
    return [int(i) for i in trace["tgt.ids"]][1:]


# ---- the rules, Qt-free ------------------------------------------------------------------------------------------
def test_only_an_encoder_decoders_untyped_decoder_input_follows():
    seq2seq = ModelConfig(arch="encoder-decoder")
    assert DecoderInput().follows(seq2seq) and not DecoderInput(typed=True).follows(seq2seq)
    assert not DecoderInput().follows(ModelConfig(arch="decoder-only"))
    assert not DecoderInput().follows(ModelConfig(arch="encoder-only"))  # sentence B stands on its own
    assert not DecoderInput().follows(None)


def test_a_typed_decoder_input_is_stale_beside_another_sentence_only():
    typed = DecoderInput().written(FIRST, typed=True)
    assert typed.stale_for(FIRST, "le chat") is None
    assert typed.stale_for(SECOND, "le chat") == FIRST
    assert typed.stale_for(SECOND, "  ") is None  # nothing written: nothing stale
    assert DecoderInput().written(FIRST, typed=False).stale_for(SECOND, "le chat") is None
    assert typed.generated(SECOND) == typed  # Generate after typing: still the person's, for the first sentence
    assert DecoderInput().generated(SECOND).written_for == SECOND


# ---- the session --------------------------------------------------------------------------------------------------
@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


@pytest.fixture(scope="module")
def seq2seq(generating_model):
    """A tiny encoder-decoder whose greedy translation is words (its output bias rules out every special)."""
    model = generating_model("encoder-decoder", seed=2)
    tok = model.tokenizer("tgt")
    with torch.no_grad():
        for i in tok.specials.hidden_ids() | {tok.unk_id}:
            model.module.out_proj.bias[i] = -1e4
    return model


def _open(qtbot, session, model):
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_model(model, FIRST, "le chat")


def test_the_models_decoder_input_becomes_its_greedy_translation_of_a_new_sentence(qtbot, session, seq2seq):
    _open(qtbot, session, seq2seq)
    with qtbot.waitSignals([session.textsChanged, session.traceReady], timeout=WAIT):
        session.set_src(SECOND)
    trace = session.trace
    assert trace.info[FOLLOWED] == (SECOND, session.tgt) and trace["src.tokens"][:3] == ["dog", "bites", "man"]
    greedy = greedy_ids(seq2seq, SECOND)
    shown = decoder_ids(trace)
    assert shown and shown == greedy[: len(shown)]  # teacher forcing on its own translation (minus a token)
    assert len(shown) == min(len(greedy) - 1, 12) or len(greedy) <= 1
    assert written_for_banner(trace) == ""


def test_a_typed_decoder_input_is_kept_with_a_banner_naming_its_sentence(qtbot, session, seq2seq):
    _open(qtbot, session, seq2seq)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_tgt("le chien", debounce=False)  # what the person types
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src(SECOND, debounce=False)
    assert session.tgt == "le chien" and session.trace.info[FOLLOWED] is None
    assert session.trace["tgt.tokens"][1:] == ["le", "chien"]
    banner = written_for_banner(session.trace)
    assert f"“{FIRST}”" in banner and "“le chien”" in banner
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src(FIRST, debounce=False)  # back to the sentence it was written for
    assert session.trace.info[WRITTEN_FOR] is None and written_for_banner(session.trace) == ""


def test_a_lessons_decoder_input_follows_and_a_cleared_one_stays_empty(qtbot, session, seq2seq):
    _open(qtbot, session, seq2seq)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_tgt("le chien", debounce=False, typed=False)  # a lesson step's
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src(SECOND, debounce=False)
    assert session.trace.info[FOLLOWED] is not None and session.tgt != "le chien"
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.reset_tgt()  # Clear: the person's choice of an empty input
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src(FIRST, debounce=False)
    assert session.tgt == "" and session.trace["tgt.tokens"] == ["<s>"]


def test_a_decoder_input_set_while_a_follow_runs_wins(qtbot, session, seq2seq):
    _open(qtbot, session, seq2seq)
    session.set_src(SECOND, debounce=False)  # the follow is under way
    session.set_tgt("le chat", debounce=False, typed=False)  # the same text a lesson step sets: still wins
    qtbot.waitUntil(lambda: not session.busy, timeout=WAIT)
    assert session.tgt == "le chat" and session.trace["tgt.tokens"][1:] == ["le", "chat"]


# ---- the window ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def translation():
    from attnlab.checkpoints.bundled import load_bundled

    return load_bundled("translation")


def test_typing_a_new_sentence_in_the_window(qtbot, open_window, translation):
    win = open_window()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.set_model(translation, "the black cat sees the small dog", "le chat noir voit le petit")
    src_box, tgt_box = win.inputs.src, win.inputs.tgt
    new = "Where is the train station?"
    src_box.selectAll()
    qtbot.keyClicks(src_box, new)  # textEdited per key, as a person types
    qtbot.waitUntil(lambda: not win.session.busy and win.session.trace.info.get(FOLLOWED) is not None, timeout=WAIT)
    greedy = greedy_ids(translation, new)
    shown = decoder_ids(win.session.trace)
    assert len(shown) == len(greedy) - 1 and shown == greedy[:-1]  # the model's greedy translation, minus a token
    assert tgt_box.text() == win.session.tgt == translation.tokenizer("tgt").decode(greedy[:-1])
    assert "typed for another sentence" not in win.banner.text()

    tgt_box.selectAll()
    qtbot.keyClicks(tgt_box, "la gare")  # the person's own decoder input
    qtbot.waitUntil(lambda: not win.session.busy and win.session.tgt == "la gare", timeout=WAIT)
    src_box.selectAll()
    qtbot.keyClicks(src_box, "the man sees the train")
    qtbot.waitUntil(lambda: not win.session.busy and win.session.src == "the man sees the train", timeout=WAIT)
    qtbot.waitUntil(lambda: "typed for another sentence" in win.banner.text(), timeout=WAIT)
    assert tgt_box.text() == "la gare" and f"“{new}”" in win.banner.text()
