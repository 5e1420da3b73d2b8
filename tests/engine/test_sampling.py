"""choose_next against transformers' own warpers and torch.multinomial (issue 35, engine/sampling.py)."""

from __future__ import annotations

import pytest
import torch
from transformers import GenerationConfig, LogitsProcessorList
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from attnlab.engine import sampling
from attnlab.engine.options import RunOptions
from attnlab.engine.sampling import SamplingSettings, choose_next, kept_probs

V = 257
CASES = [  # (temperature, top_k, top_p)
    (1.0, 50, 1.0),
    (0.7, 0, 0.9),
    (1.3, 10, 0.5),
    (0.5, 1, 1.0),
    (2.0, 0, 0.05),
    (1.0, 300, 0.99),
]


def logits_for(seed: int, spread: float = 3.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(V, generator=g) * spread  # [V]
    x[7] = x[11] = x.max() + 0.5  # a tie at the top
    x[20:30] = x[40]  # ties at the cut
    return x


def transformers_probs(logits: torch.Tensor, t: float, k: int, p: float) -> torch.Tensor:
    """transformers' sampling distribution: its warpers as _get_logits_processor builds them, then softmax."""
    warpers = LogitsProcessorList()
    if t != 1.0:
        warpers.append(TemperatureLogitsWarper(t))
    if k:
        warpers.append(TopKLogitsWarper(top_k=k, min_tokens_to_keep=1))
    if p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=p, min_tokens_to_keep=1))
    scores = warpers(torch.zeros(1, 1, dtype=torch.long), logits[None].clone())  # [1, V]
    return torch.softmax(scores, dim=-1)[0]  # [V]


@pytest.mark.parametrize("t,k,p", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_kept_set_and_probabilities_equal_transformers(t: float, k: int, p: float, seed: int) -> None:
    logits = logits_for(seed)
    ours = kept_probs(logits, SamplingSettings(True, t, k, p, 0))
    theirs = transformers_probs(logits, t, k, p)
    assert torch.equal(ours > 0, theirs > 0)  # the same kept set
    assert torch.allclose(ours, theirs, atol=1e-7, rtol=0)
    assert float(ours.sum()) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("t,k,p", CASES)
def test_kept_bars_are_the_tempered_softmax_renormalised_over_the_kept(t: float, k: int, p: float) -> None:
    logits = logits_for(3)
    ours = kept_probs(logits, SamplingSettings(True, t, k, p, 0))
    tempered = torch.softmax(logits / t, dim=-1)  # [V]
    kept = ours > 0
    assert torch.allclose(ours[kept], tempered[kept] / tempered[kept].sum(), atol=1e-6)


def test_a_seed_gives_the_same_tokens_as_torch_multinomial_with_that_generator() -> None:
    logits = logits_for(5, spread=1.0)
    settings = SamplingSettings(True, 0.9, 40, 0.95, 1234)
    ours = [choose_next(logits, settings, g) for g in [sampling.seeded(1234)] for _ in range(30)]
    again = [choose_next(logits, settings, g) for g in [sampling.seeded(1234)] for _ in range(30)]
    g = torch.Generator().manual_seed(1234)
    probs = transformers_probs(logits, 0.9, 40, 0.95)[None]  # [1, V]
    reference = [int(torch.multinomial(probs, num_samples=1, generator=g)[0, 0]) for _ in range(30)]
    assert ours == again == reference
    assert len(set(ours)) > 1  # real draws, not the argmax again and again


def test_greedy_when_sampling_is_off_and_one_token_left_by_top_k_1() -> None:
    logits = logits_for(2)
    assert choose_next(logits, SamplingSettings(False, 5.0, 3, 0.1, 9)) == int(torch.argmax(logits))
    assert choose_next(logits, SamplingSettings(True, 5.0, 1, 1.0, 9)) == int(torch.argmax(logits))


def test_twenty_seeded_draws_are_seed_then_seed_plus_one() -> None:
    logits = logits_for(4, spread=0.5)
    settings = SamplingSettings(True, 1.0, 0, 1.0, 77)
    counts = sampling.sample_counts(kept_probs(logits, settings), 77, 20)
    assert counts == [choose_next(logits, settings, sampling.seeded(77 + i)) for i in range(20)]


def test_defaults_are_transformers_generation_defaults() -> None:
    global_defaults = GenerationConfig._get_default_generation_params()
    for field, key in sampling.CONFIG_KEYS.items():
        assert sampling.DEFAULTS[field] == global_defaults[key]
        assert getattr(RunOptions(), field) == global_defaults[key]


@pytest.mark.parametrize(
    "change,word",
    [({"top_k": -1}, "top_k"), ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p"), ({"seed": -3}, "seed")],
)
def test_bad_values_are_refused_in_one_line(change: dict, word: str, tiny_model) -> None:
    problems = RunOptions(**change).problems(tiny_model().config)
    assert len(problems) == 1 and word in problems[0]


def test_sources_say_you_for_a_changed_value() -> None:
    defaults = {"top_p": {"value": 0.9, "source": "generation_config.json (top_p)"}}
    rows = dict((f, s) for f, _v, s in sampling.sources(RunOptions(top_p=0.9, seed=4), defaults))
    assert rows == {
        "sample": "default",
        "temperature": "default",
        "top_k": "default",
        "top_p": rows["top_p"],
        "seed": "you",
    }
    assert rows["top_p"] == "generation_config.json (top_p)"
