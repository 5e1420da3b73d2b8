"""A Hugging Face folder with a chat template: attnlab keeps the template, and a conversation traced through the
model reads exactly the ids `AutoTokenizer.apply_chat_template(..., tokenize=True)` gives, with the logits of
transformers' own model on those ids; the tokens carry their provenance and the turns' spans."""

from __future__ import annotations

import pytest
import torch

from attnlab.checkpoints.loader import load_checkpoint
from attnlab.engine.chat_prompt import Conversation
from attnlab.engine.live_inputs import InputError

transformers = pytest.importorskip("transformers")
from tests.support.chat_families import FAMILIES, chat_folder, tiny_llama, tiny_tokenizer  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the capital of France?"},
]


@pytest.mark.parametrize(("name", "as_file"), [("llama3", True), ("qwen2.5", False)])
def test_a_conversation_reads_apply_chat_templates_ids(tmp_path, name, as_file):
    hf_model, folder = chat_folder(tmp_path, name, as_file)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    live = load_checkpoint(folder)
    assert live.chat_template == FAMILIES[name].template
    for add in (True, False):
        expected = auto.apply_chat_template(MESSAGES, tokenize=True, add_generation_prompt=add)["input_ids"]
        trace = live.trace(Conversation.of(MESSAGES, add) if not add else MESSAGES)
        ids = trace["tgt.ids"].reshape(-1).tolist()
        assert ids == expected
        with torch.no_grad():
            theirs = hf_model(torch.tensor([expected])).logits[0]
        torch.testing.assert_close(trace["logits"].float(), theirs, atol=1e-4, rtol=1e-4)
        chat = trace.info["chat"]
        assert len(chat["provenance"]) == len(ids) and "words" in chat["provenance"]
        assert [t[0] for t in chat["turns"]] == ["system", "user"]


def test_a_model_without_a_template_says_so(tmp_path):
    tiny_llama().save_pretrained(tmp_path)
    family = FAMILIES["llama3"]
    transformers.PreTrainedTokenizerFast(tokenizer_object=tiny_tokenizer(family)).save_pretrained(tmp_path)
    live = load_checkpoint(tmp_path)
    assert live.chat_template is None
    with pytest.raises(InputError, match="no chat template"):
        live.trace(MESSAGES)
