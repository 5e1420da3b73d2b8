"""Hostile calls to the Python API (issue 14): bad ids, masks, temperatures, head counts and sizes are refused
with an OptionsError / ConfigError / ValueError that says why; probabilities are never NaN and the temperature
never changes the argmax; random models and loads leave the caller's random state alone, on any thread."""

import math
import threading

import pytest
import torch

import attnlab
from attnlab.checkpoints import random_model
from attnlab.engine.config import ConfigError, ModelConfig
from attnlab.engine.live import InputError, tempered_softmax
from attnlab.engine.options import MAX_TEMPERATURE, MIN_TEMPERATURE, OptionsError, RunOptions
from tests.support.hostile_files import TINY, TOK, tiny_checkpoint, tiny_model

SRC = "the black cat sat on the mat"


@pytest.fixture(scope="module")
def model():
    return tiny_model()


# ---- ids and texts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ids, phrase",
    [
        ([-1], "id -1 is not a token"),
        ([10**6], "id 1000000 is not a token"),
        ([4, TOK.vocab_size], f"ids run from 0 to {TOK.vocab_size - 1}"),
        ([1.5], "whole numbers"),
        (["4"], "whole numbers"),
        ([True], "whole numbers"),
    ],
)
def test_decoder_ids_outside_the_vocabulary_are_refused(model, ids, phrase):
    with pytest.raises(InputError, match=phrase):
        model.trace(SRC, ids)


def test_good_ids_of_any_integer_type_are_read(model):
    t = model.trace(SRC, [4, torch.tensor(5)])
    assert t["tgt.ids"].tolist() == [1, 4, 5]


def test_text_of_the_wrong_type_is_refused(model):
    with pytest.raises(InputError, match="text or a list of token ids"):
        model.trace(SRC, {"a": 1})


def test_a_megabyte_sentence_is_read_up_to_the_cap_with_a_notice(model):
    t = model.trace("cat " * 250_000)
    assert any("1,000,000 characters" in n for n in t.notices)
    assert len(t["src.tokens"]) == model.config.max_len


# ---- masks -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "masks, phrase",
    [
        ((("enc.0.self", frozenset({(-1000, 0)})),), "from 0 to 15"),
        ((("enc.0.self", frozenset({(-1, 0)})),), "got (-1, 0)"),
        ((("enc.0.self", frozenset({(0, 16)})),), "from 0 to 15"),
        ((("enc.0.self", frozenset({(0, 1, 2)})),), "(query, key)"),
        ((("enc.9.self", frozenset({(0, 1)})),), "encoder has 1 layers"),
        ((("enc.0.cross", frozenset({(0, 1)})),), "has no such attention"),
        ((("bogus", frozenset({(0, 1)})),), "not an attention site"),
        ((("enc.self",),), "pairs of (site, cells)"),
        (("enc.0.self",), "pairs of (site, cells)"),
    ],
)
def test_impossible_masks_are_refused(model, masks, phrase):
    with pytest.raises(OptionsError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        model.trace(SRC, "le chat", RunOptions(custom_masks=masks))


def test_a_cross_mask_on_a_model_without_cross_attention_is_refused():
    lm = tiny_model(arch="decoder-only")
    with pytest.raises(OptionsError, match="has no such attention"):
        lm.trace(SRC, options=RunOptions().with_custom_mask("dec.cross", {(0, 0)}))
    lm.trace(SRC, options=RunOptions().with_custom_mask("dec.0.self", {(1, 0)}))  # a real site: fine


# ---- temperature -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "t, phrase",
    [
        ("hot", "must be a number"),
        (None, "must be a number"),
        (True, "must be a number"),
        (float("nan"), "positive"),
        (float("inf"), "finite"),
        (0.0, "positive"),
        (-1.0, "positive"),
        (1e-40, "too small"),
        (1e-300, "too small"),
        (1e-320, "too small"),
        (1e30, "too large"),
    ],
)
def test_temperatures_that_cannot_be_computed_are_refused(model, t, phrase):
    with pytest.raises(OptionsError, match=phrase):
        model.trace(SRC, "le chat", RunOptions(temperature=t))
    with pytest.raises(OptionsError, match=phrase):
        next(model.generate(SRC, options=RunOptions(temperature=t)))


@pytest.mark.parametrize("t", [MIN_TEMPERATURE, 1e-3, 0.5, 1.0, 7.0, MAX_TEMPERATURE])
def test_accepted_temperatures_give_finite_probabilities_with_the_same_argmax(model, t):
    plain = model.trace(SRC, "le chat")["probs"]
    probs = model.trace(SRC, "le chat", RunOptions(temperature=t))["probs"]
    assert torch.isfinite(probs).all() and torch.allclose(probs.sum(-1), torch.ones(len(probs)))
    assert torch.equal(probs.argmax(-1), plain.argmax(-1))


def test_tempered_softmax_matches_pytorch_where_pytorch_is_exact():
    logits = torch.randn(5, 50, dtype=torch.float64) * 4
    for t in (0.3, 1.0, 2.5):
        assert torch.allclose(tempered_softmax(logits, t), torch.softmax(logits / t, dim=-1), atol=1e-12)
    tiny = tempered_softmax(logits.float(), 1e-40)  # the unsafe division overflows to inf - inf = NaN here
    assert torch.isnan(torch.softmax(logits.float() / 1e-40, dim=-1)).any()
    assert torch.equal(tiny.argmax(-1), logits.argmax(-1)) and torch.isfinite(tiny).all()


def test_generation_at_the_smallest_temperature_is_the_greedy_output(model):
    greedy = model.translate(SRC, max_new_tokens=5)
    cold = model.translate(SRC, max_new_tokens=5, options=RunOptions(temperature=MIN_TEMPERATURE))
    assert cold == greedy


# ---- heads and sizes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "heads, phrase",
    [(0, "at least 1"), (-4, "at least 1"), ("4", "whole number"), (3, "do not divide"), (32, "do not divide")],
)
def test_impossible_head_counts_are_refused(model, heads, phrase):
    with pytest.raises(OptionsError, match=phrase):
        model.trace(SRC, "le chat", RunOptions(n_heads=heads))


def test_none_still_means_the_trained_head_count(model):
    assert model.trace(SRC, "le chat", RunOptions(n_heads=None)).n_heads == TINY.n_heads


@pytest.mark.parametrize("arch, max_len", [("encoder-only", 1), ("encoder-only", 2), ("decoder-only", 1)])
def test_a_max_len_with_no_room_for_a_word_is_refused(arch, max_len):
    problems = ModelConfig(arch=arch, max_len=max_len).problems()
    assert any("leaves no room for a word" in p for p in problems), problems
    assert not any("-1" in p for p in problems)
    with pytest.raises(ConfigError):
        random_model(ModelConfig(arch=arch, max_len=max_len, d_model=16, n_heads=2, d_ff=16))


def test_the_smallest_encoder_only_model_reads_one_word():
    m = random_model(ModelConfig(arch="encoder-only", max_len=3, d_model=16, n_heads=2, d_ff=16), tokenizer=TOK)
    t = m.trace("the black cat")
    assert t["src.tokens"] == ["<s>", "the", "</s>"]
    assert any("reads at most 1 (+2 special)" in n for n in t.notices)


@pytest.mark.parametrize(
    "field, value",
    [
        ("n_decoder_layers", 1_000_000),
        ("d_model", 10**30),
        ("src_vocab_size", 2 * 10**9),
        ("max_len", 10**9),
        ("d_ff", 10**8),
    ],
)
def test_absurd_sizes_are_refused_before_building(field, value):
    import dataclasses

    problems = dataclasses.replace(TINY, **{field: value}).problems()
    assert len(problems) == 1 and problems[0].startswith(f"{field} ") and "more than attnlab handles" in problems[0]


def test_parameter_count_is_the_built_models():
    for arch in ("encoder-decoder", "decoder-only", "encoder-only"):
        for changes in ({}, {"positional": "learned", "tie_output": False, "final_norm": True, "bias": False}):
            m = tiny_model(arch=arch, **changes)
            assert m.config.parameter_count() == sum(p.numel() for p in m.module.checkpoint_tensors().values())


# ---- random state ------------------------------------------------------------------------------------------
def weights(model):
    return {k: v.detach().clone() for k, v in model.module.checkpoint_tensors().items()}


def same(a, b):
    return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


def run_threads(n, work):
    out = [None] * n
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, work())) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_random_model_is_the_same_from_many_threads_and_leaves_the_global_rng_alone():
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    alone = weights(random_model(TINY, seed=5, tokenizer=TOK))
    assert torch.equal(torch.get_rng_state(), state)
    together = run_threads(4, lambda: weights(random_model(TINY, seed=5, tokenizer=TOK)))
    assert all(same(alone, w) for w in together)
    assert torch.equal(torch.get_rng_state(), state)
    assert not same(alone, weights(random_model(TINY, seed=6, tokenizer=TOK)))


def test_loads_on_two_threads_leave_the_global_rng_alone_and_match_a_single_load(tmp_path):
    path = tiny_checkpoint(tmp_path / "m.safetensors")
    torch.manual_seed(99)
    state = torch.get_rng_state()
    alone = weights(attnlab.load(path))
    together = run_threads(2, lambda: weights(attnlab.load(path)))
    assert all(same(alone, w) for w in together)
    assert torch.equal(torch.get_rng_state(), state)
    assert math.isfinite(float(torch.rand(1)))  # the generator still works as the caller left it
