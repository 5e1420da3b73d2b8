"""The conversation editor (Stage → Conversation…): enabled only for a model with a chat template; OK runs the
model on the conversation, whose ids are transformers' apply_chat_template ids; the tokens stage's chips carry
their provenance and the attention maps mark the turns; "Plain text" goes back to the source box."""

from __future__ import annotations

import pytest

from attnlab.checkpoints.loader import load_checkpoint
from attnlab.present.stages import ViewState
from attnlab.present.views.attention import map_view
from attnlab.present.views.inputs import tokens_view
from attnlab.ui.stages.common import PanelHeatmap

transformers = pytest.importorskip("transformers")
from tests.support.chat_families import chat_folder  # noqa: E402

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py
WAIT = 20_000


def test_the_editor_runs_the_conversation_the_template_renders(qtbot, tmp_path, open_window):
    _hf, folder = chat_folder(tmp_path, "llama3", as_file=True)
    w = open_window(load_checkpoint(folder))
    assert w.chat_action.isEnabled()
    w._open_chat()
    dialog = w._chat_dialog
    dialog.system.setPlainText("You are a helpful assistant.")
    dialog.add_turn("assistant", "Paris.")
    dialog.add_turn("user", "And of Italy?")
    messages = dialog.messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        dialog.accept()
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    trace = w.session.trace
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    expected = auto.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)["input_ids"]
    assert trace["tgt.ids"].reshape(-1).tolist() == expected
    assert w.inputs.src_label.text() == "Chat (4 turns):"
    stages = {s.kind: s for s in w.session.stages}
    shown = tokens_view(trace, stages["tokens"], ViewState())
    chips = shown.chips
    assert {c.origin for c in chips} >= {"words", "role", "special"}
    n_special = sum(c.origin == "special" for c in chips)
    assert shown.count.startswith(f"{len(chips)} tokens: {len(chips) - n_special} from the text + {n_special} special")
    spans = map_view(trace, stages["weights"], ViewState()).matrix.spans
    assert [role for role, _a, _b in spans] == ["system", "user", "assistant", "user"]
    w.session.set_stage(stages["weights"].key)
    qtbot.waitUntil(lambda: any(m.record.get("spans") == spans for m in w.findChildren(PanelHeatmap)), timeout=WAIT)
    # back to the text box
    w._open_chat()
    assert w._chat_dialog.messages() == messages  # the editor opens on the conversation the runs read
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w._chat_dialog.plain_text()
    assert w.session.chat_messages() is None and "chat" not in w.session.trace.info
    assert w.inputs.src_label.text() == "&Prompt:"


def test_a_model_without_a_template_has_no_editor(open_window, tiny_model):
    w = open_window(tiny_model("decoder-only"))
    assert not w.chat_action.isEnabled()
