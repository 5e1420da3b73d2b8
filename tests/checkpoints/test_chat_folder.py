"""A Hugging Face folder with a chat template: attnlab keeps the template, and a conversation traced through the
model reads exactly the ids `AutoTokenizer.apply_chat_template(..., tokenize=True)` gives, with the logits of
transformers' own model on those ids; the tokens carry their provenance and the turns' spans."""

from __future__ import annotations

import json

import pytest
import torch

from attnlab.checkpoints.loader import load_checkpoint
from attnlab.engine.chat_prompt import Conversation
from attnlab.engine.live_inputs import InputError

transformers = pytest.importorskip("transformers")
from tests.support.chat_families import FAMILIES, tiny_tokenizer  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the capital of France?"},
]


def _llama():
    """A tiny random Llama with room for the tiny tokenizers' 400 tokens (tests/support/hf_tiny's sizes)."""
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=400,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return transformers.LlamaForCausalLM(cfg).eval()


def _folder(tmp_path, name: str, as_file: bool):
    family = FAMILIES[name]
    model = _llama()
    model.save_pretrained(tmp_path)
    named = {"eos_token": family.eos, **({"bos_token": family.bos} if family.bos else {})}
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tiny_tokenizer(family), **named)
    tok.save_pretrained(tmp_path)
    config_path = tmp_path / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    if as_file:  # chat_template.jinja beside tokenizer_config.json (transformers 4.43+ writes it so)
        (tmp_path / "chat_template.jinja").write_text(family.template, encoding="utf-8")
        config.pop("chat_template", None)
    else:  # a list of named templates in tokenizer_config.json
        config["chat_template"] = [
            {"name": "tool_use", "template": "x"},
            {"name": "default", "template": family.template},
        ]
    config_path.write_text(json.dumps(config))
    return model, tmp_path


@pytest.mark.parametrize(("name", "as_file"), [("llama3", True), ("qwen2.5", False)])
def test_a_conversation_reads_apply_chat_templates_ids(tmp_path, name, as_file):
    hf_model, folder = _folder(tmp_path, name, as_file)
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
    _llama().save_pretrained(tmp_path)
    family = FAMILIES["llama3"]
    transformers.PreTrainedTokenizerFast(tokenizer_object=tiny_tokenizer(family)).save_pretrained(tmp_path)
    live = load_checkpoint(tmp_path)
    assert live.chat_template is None
    with pytest.raises(InputError, match="no chat template"):
        live.trace(MESSAGES)
