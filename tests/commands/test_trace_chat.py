"""`attnlab trace --chat conversation.json`: the saved trace's ids are transformers' apply_chat_template ids;
a bad conversation file or a model without a template fails in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnlab.cli import main

transformers = pytest.importorskip("transformers")
from tests.support.chat_families import chat_folder  # noqa: E402

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.mark.parametrize("add", [True, False])
def test_trace_chat_saves_apply_chat_templates_ids(tmp_path, add):
    _model, folder = chat_folder(tmp_path / "model", "smollm2", as_file=True)
    conversation = tmp_path / "conversation.json"
    data = MESSAGES if add else {"messages": MESSAGES, "add_generation_prompt": False}
    conversation.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "trace.npz"
    assert main(["trace", "--checkpoint", str(folder), "--chat", str(conversation), "--out", str(out)]) == 0
    expected = transformers.AutoTokenizer.from_pretrained(str(folder)).apply_chat_template(
        MESSAGES, tokenize=True, add_generation_prompt=add
    )["input_ids"]
    with np.load(out, allow_pickle=False) as npz:
        assert npz["tgt.ids"].reshape(-1).tolist() == expected


@pytest.mark.parametrize(
    ("text", "said"),
    [("[1, 2]", "message 1 must be"), ("{", "conversation file"), ('{"messages": "hi"}', "list of")],
)
def test_a_bad_conversation_fails_in_one_line(tmp_path, capsys, text, said):
    _model, folder = chat_folder(tmp_path / "model", "smollm2", as_file=True)
    conversation = tmp_path / "conversation.json"
    conversation.write_text(text, encoding="utf-8")
    capsys.readouterr()  # what save_pretrained printed
    code = main(["trace", "--checkpoint", str(folder), "--chat", str(conversation), "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "\n" not in err
