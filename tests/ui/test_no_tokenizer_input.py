"""A folder without tokenizer files reads token ids typed as numbers; text with no number in it is refused in one
line (the API, the CLI) and the app says why on the panel instead of "Loading…" for ever (it crashed in the
embedding with a float index tensor before)."""

from __future__ import annotations

import pytest

import attnlab
from attnlab.engine.live import InputError
from tests.support import hf_tiny


@pytest.fixture()
def folder(tmp_path):
    model, _config = hf_tiny.llama()
    model.save_pretrained(tmp_path / "llama", safe_serialization=True)  # weights and config.json only
    return tmp_path / "llama"


def test_text_without_a_token_is_refused_in_one_line_and_numbers_run(folder):
    m = attnlab.load(folder)
    with pytest.raises(InputError) as refused:
        m.trace(tgt="le chat")
    message = str(refused.value)
    assert "\n" not in message and "type token ids as numbers" in message
    assert m.trace(tgt="12 7 40")["tgt.ids"].tolist() == [12, 7, 40]


def test_the_app_says_why_instead_of_loading_for_ever(qtbot, folder, isolated_settings):
    from attnlab.ui.window.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.failed, timeout=30000):
        w.session.set_src("the black cat", debounce=False)
        w.open_checkpoint(str(folder))
    qtbot.waitUntil(lambda: "type token ids as numbers" in w.placeholder.text(), timeout=30000)
    assert w.session.trace is None and "Loading" not in w.stage_title.text()
    with qtbot.waitSignal(w.session.traceReady, timeout=30000):
        w.session.set_src("12 7 40", debounce=False)
