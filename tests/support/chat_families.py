# ruff: noqa: E501  (the Qwen2.5 template is quoted line for line as it ships)
"""The chat templates of six instruct families, as their tokenizer_config.json files ship them (quoted from
public copies: llama.cpp's tests/test-chat-template.cpp, and projects that quote the files verbatim), and tiny
byte-level BPE tokenizers holding each family's special tokens, built here (nothing downloaded)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
    "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
)
QWEN25 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""
GEMMA = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
    "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
    "(message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif "
    "%}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if "
    "add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"
)
MISTRAL = (  # Mistral-7B-Instruct-v0.2 ("v1" template with a system prompt)
    "{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content'] %}\n    {%- set "
    "loop_messages = messages[1:] %}\n{%- else %}\n    {%- set loop_messages = messages %}\n{%- endif %}\n\n{{- "
    "bos_token }}\n{%- for message in loop_messages %}\n    {%- if (message['role'] == 'user') != (loop.index0 % 2 "
    "== 0) %}\n        {{- raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}\n    {%- endif %}\n    {%- if message['role'] == 'user' %}\n        {%- "
    "if loop.first and system_message is defined %}\n            {{- ' [INST] ' + system_message + '\\n\\n' + "
    "message['content'] + ' [/INST]' }}\n        {%- else %}\n            {{- ' [INST] ' + message['content'] + ' "
    "[/INST]' }}\n        {%- endif %}\n    {%- elif message['role'] == 'assistant' %}\n        {{- ' ' + "
    "message['content'] + eos_token}}\n    {%- else %}\n        {{- raise_exception('Only user and assistant roles "
    "are supported, with the exception of an initial optional system message!') }}\n    {%- endif %}\n{%- endfor "
    "%}\n"
)
PHI3 = (  # Phi-3-small
    "{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + "
    "'<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% "
    "endif %}"
)
SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou "
    "are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + "
    "message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt "
    "%}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class Family:
    name: str
    template: str
    specials: tuple[str, ...]  # the tokenizer's special tokens (added, special)
    bos: str | None
    eos: str
    adds_bos: bool  # the tokenizer puts BOS before text it encodes with special tokens (Llama 3, Gemma, Mistral)
    takes_system: bool = True


FAMILIES = {
    f.name: f
    for f in (
        Family(
            "llama3",
            LLAMA3,
            ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
            "<|begin_of_text|>",
            "<|eot_id|>",
            True,
        ),
        Family("qwen2.5", QWEN25, ("<|endoftext|>", "<|im_start|>", "<|im_end|>"), None, "<|im_end|>", False),
        Family(
            "gemma",
            GEMMA,
            ("<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"),
            "<bos>",
            "<eos>",
            True,
            False,
        ),
        Family("mistral", MISTRAL, ("<unk>", "<s>", "</s>"), "<s>", "</s>", True),
        Family(
            "phi3",
            PHI3,
            ("<s>", "<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"),
            "<s>",
            "<|endoftext|>",
            False,
        ),
        Family("smollm2", SMOLLM2, ("<|endoftext|>", "<|im_start|>", "<|im_end|>"), None, "<|im_end|>", False),
    )
}

CORPUS = [
    "You are a helpful assistant. Hello, who are you? I am an assistant, here to help.",
    "What is the capital of France? The capital of France is Paris.",
    "user assistant system model INST SYS tool response",
] * 20


def tiny_tokenizer(family: Family) -> Tokenizer:
    """A byte-level BPE (so any text encodes) with the family's special tokens, trained on a few lines."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = CORPUS + [family.template]
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[AddedToken(s, special=True, normalized=False) for s in family.specials],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    return tok


def tiny_llama() -> Any:
    """A tiny random Llama with room for the tiny tokenizers' 400 tokens (tests/support/hf_tiny's sizes)."""
    import torch
    import transformers

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


def chat_folder(tmp_path: Path, name: str, as_file: bool) -> tuple[Any, Path]:
    """A Hugging Face folder: a tiny Llama, the family's tiny tokenizer and its chat template, in
    chat_template.jinja (`as_file`) or as tokenizer_config.json's list of named templates."""
    import transformers

    family = FAMILIES[name]
    model = tiny_llama()
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
