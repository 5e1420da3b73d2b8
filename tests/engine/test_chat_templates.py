"""Chat conversations rendered and tokenized as transformers' `apply_chat_template(..., tokenize=True)` does,
for the templates of six instruct families (Llama 3, Qwen2.5, Gemma, Mistral, Phi-3, SmolLM2) written into tiny
tokenizers built here; each token's provenance; the doubled-BOS notice; hostile templates stopped in one line."""

from __future__ import annotations

import pytest

from attnlab.engine.chat_prompt import Conversation, chat_prompt
from attnlab.engine.chat_template import ChatTemplateError, chosen_template, render
from attnlab.engine.hf_tokenizer import LibraryTokenizer
from attnlab.engine.specials import Specials

transformers = pytest.importorskip("transformers")
from tests.support.chat_families import FAMILIES, Family, tiny_tokenizer  # noqa: E402

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
TALK = [
    {"role": "user", "content": "Hello, who are you?"},
    {"role": "assistant", "content": "  I am an assistant.  "},
    {"role": "user", "content": "What is the capital of France?"},
]


def _pair(family: Family) -> tuple[LibraryTokenizer, object]:
    """(attnlab's tokenizer, transformers' tokenizer) over the same tiny tokenizer."""
    hf = tiny_tokenizer(family)
    bos = hf.token_to_id(family.bos) if family.bos else None
    eos = hf.token_to_id(family.eos)
    specials = Specials(bos=bos, eos=eos, prefix={"decoder": [bos]} if family.adds_bos and bos is not None else {})
    ours = LibraryTokenizer(hf, specials)
    named = {"eos_token": family.eos, **({"bos_token": family.bos} if family.bos else {})}
    theirs = transformers.PreTrainedTokenizerFast(tokenizer_object=hf, chat_template=family.template, **named)
    return ours, theirs


def _conversations(family: Family) -> list[list[dict]]:
    plain = [TALK[:1], TALK]
    return plain + ([[SYSTEM, *TALK[:1]], [SYSTEM, *TALK]] if family.takes_system else [])


@pytest.mark.parametrize("name", FAMILIES)
def test_ids_equal_apply_chat_template(name):
    family = FAMILIES[name]
    ours, theirs = _pair(family)
    for messages in _conversations(family):
        for add in (True, False):
            expected = theirs.apply_chat_template(messages, tokenize=True, add_generation_prompt=add)["input_ids"]
            text = theirs.apply_chat_template(messages, tokenize=False, add_generation_prompt=add)
            prompt = chat_prompt(Conversation.of(messages, add), family.template, ours, {})
            assert prompt.text == text, (name, messages, add)
            assert list(prompt.ids) == expected, (name, messages, add)
            assert len(prompt.provenance) == len(prompt.ids)


def test_a_template_that_refuses_a_conversation_says_why_in_one_line():
    ours, theirs = _pair(FAMILIES["gemma"])
    with pytest.raises(Exception, match="System role not supported"):
        theirs.apply_chat_template([SYSTEM, *TALK[:1]], tokenize=True)
    with pytest.raises(ChatTemplateError, match="System role not supported") as caught:
        chat_prompt(Conversation.of([SYSTEM, *TALK[:1]]), FAMILIES["gemma"].template, ours, {})
    assert "\n" not in str(caught.value)


def test_each_token_is_marked_by_where_it_came_from():
    family = FAMILIES["qwen2.5"]
    ours, _ = _pair(family)
    prompt = chat_prompt(Conversation.of([SYSTEM, *TALK]), family.template, ours, {})
    tokens = [ours.id_to_token(i) for i in prompt.ids]
    kinds = dict(zip(tokens, prompt.provenance, strict=False))
    assert kinds["<|im_start|>"] == "special" and kinds["<|im_end|>"] == "special"
    assert set(prompt.provenance) == {"special", "role", "words", "template"}
    # each turn's words are the tokens marked "words" between its span's ends, and decode to the message
    assert [role for role, _a, _b in prompt.turns] == ["system", "user", "assistant", "user"]
    for (_role, a, b), message in zip(prompt.turns, [SYSTEM, *TALK], strict=True):
        assert set(prompt.provenance[a:b]) == {"words"}
        assert ours.hf.decode(list(prompt.ids[a:b])).strip() == message["content"].strip()
    roles = [ours.hf.decode([i]) for i, k in zip(prompt.ids, prompt.provenance, strict=True) if k == "role"]
    assert "".join(roles) == "systemuserassistantuserassistant"  # four turns and the generation prompt


def test_a_doubled_bos_is_flagged():
    # Llama 3: the template writes <|begin_of_text|>, and the tokenizer adds one to text it encodes
    family = FAMILIES["llama3"]
    ours, theirs = _pair(family)
    prompt = chat_prompt(Conversation.of(TALK[:1]), family.template, ours, {})
    assert prompt.ids.count(ours.specials.bos) == 1  # apply_chat_template's ids: one
    assert any("Doubled BOS" in n for n in prompt.notices)
    # the same template on a tokenizer that adds nothing: no notice
    plain = LibraryTokenizer(ours.hf, Specials(bos=ours.specials.bos, eos=ours.specials.eos))
    assert not chat_prompt(Conversation.of(TALK[:1]), family.template, plain, {}).notices
    # a template that writes BOS twice: the ids start with two
    twice = "{{ bos_token }}" + family.template
    prompt = chat_prompt(Conversation.of(TALK[:1]), twice, plain, {})
    expected = transformers.PreTrainedTokenizerFast(
        tokenizer_object=ours.hf, chat_template=twice, bos_token=family.bos, eos_token=family.eos
    ).apply_chat_template(TALK[:1], tokenize=True, add_generation_prompt=True)["input_ids"]
    assert list(prompt.ids) == expected and expected[:2] == [ours.specials.bos] * 2
    assert any("twice" in n for n in prompt.notices)
    # Qwen2.5 has no BOS at all
    qwen, _ = _pair(FAMILIES["qwen2.5"])
    assert not chat_prompt(Conversation.of(TALK[:1]), FAMILIES["qwen2.5"].template, qwen, {}).notices


HOSTILE = {
    "python internals": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "globals": "{{ cycler.__init__.__globals__ }}",
    "huge range": "{% for i in range(10**9) %}x{% endfor %}",
    "huge repetition": "{{ 'a' * 10**10 }}",
    "huge power": "{% set x = 2 ** 64 %}{{ x ** 64 ** 64 }}",
    "endless loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "doubling": "{% set ns = namespace(s='ab') %}{% for i in range(80) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "huge output": "{% for i in range(100000) %}{% for j in range(100) %}0123456789{% endfor %}{% endfor %}",
    "squaring": "{% set ns = namespace(x=3) %}{% for i in range(60) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
    "syntax": "{% for m in messages %}",
    "namespace dunder": "{% set ns = namespace() %}{% set ns.__class__ = 1 %}",
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_template_is_stopped_in_one_line(name):
    with pytest.raises(ChatTemplateError) as caught:
        render(HOSTILE[name], TALK, True, {"bos_token": "<s>"}, seconds=0.5)
    assert "\n" not in str(caught.value) and str(caught.value)


def test_the_sandbox_hides_python_internals():
    assert render("{{ ''.__class__ }}{{ messages.__len__ }}", TALK, True, {}) == ""


def test_named_templates_choose_the_default():
    named = [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
    assert chosen_template(named) == "D" and chosen_template("S") == "S" and chosen_template(3) is None
