"""The desktop app with the BART family: a tiny random BART / mBART-50 / Pegasus folder (saved by save_pretrained
with its tokenizer files, nothing downloaded) opened like File → Open and stepped through every stage: every
panel shows content, the layer input's page gives the embedding LayerNorm, and the tokens page says which token
the decoder starts from and what mBART's language code is."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from attnlab.ui.window.main_window import MainWindow  # noqa: E402
from tests.families.test_hf_bart_generate import saved_model  # noqa: E402
from tests.ui.test_app_imported import close, step_everywhere  # noqa: E402

WAIT = 30000
pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


def open_folder(qtbot, folder, text: str) -> MainWindow:
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.session.set_src(text, debounce=False)
        w.open_checkpoint(str(folder))
    qtbot.waitUntil(
        lambda: not w.session.busy and w.session.model is not None and w.session.model.name == folder.name,
        timeout=WAIT,
    )
    return w


@pytest.mark.parametrize("family", ["bart", "mbart", "pegasus"])
def test_every_stage_of_the_family_shows_content(qtbot, tmp_path, family):
    generation = {"forced_bos_token_id": 0} if family == "bart" else {}
    folder, _model = saved_model(family, tmp_path, **generation)
    w = open_folder(qtbot, folder, "Hello, world! The cat sat.")
    try:
        trace = w.session.trace
        seen = step_everywhere(w)
        tokens_page = seen["tgt.tokens"][1]
        start = trace["tgt.tokens"][0]
        assert start == {"bart": "</s>", "mbart": "</s>", "pegasus": "<pad>"}[family]
        assert f"decoder starts from {start.replace('<', '&lt;').replace('>', '&gt;')}" in tokens_page
        if family == "bart":
            assert trace["tgt.tokens"][:2] == ["</s>", "<s>"] and trace["src.tokens"][0] == "<s>"
        if family == "mbart":  # MBart50Tokenizer with src_lang en_XX: the code first, said as a code
            assert trace["src.tokens"][0] == "en_XX" and "en_XX is not a word" in seen["src.tokens"][1]
        layer_input = seen["src.input"][1]
        assert ("LayerNorm<sub>emb</sub>" in layer_input) == (family != "pegasus")
    finally:
        close(w)
