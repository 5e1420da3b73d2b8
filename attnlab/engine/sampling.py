"""Choosing the next token: greedy, or drawn with temperature, top-k, top-p and a seed (issue 35). Pure torch.

The order and the rules are transformers' (generation/utils.py `_get_logits_processor` and `_sample`): the
logits divided by the temperature (TemperatureLogitsWarper), then every token below the k-th largest set to
-inf (TopKLogitsWarper, ties with the k-th kept), then, over what is left sorted ascending, every token whose
cumulative probability is at most 1 - top_p removed (TopPLogitsWarper, the most probable token always kept),
then softmax and one `torch.multinomial` draw. The draw happens on the CPU from float32 probabilities with a
`torch.Generator` seeded by the person's seed, so one seed gives the same tokens on every run and machine,
whatever device the model ran on (for the same logits).

The defaults are transformers' own when a model folder's generation_config.json says nothing
(`GenerationConfig._get_default_generation_params`: do_sample False, temperature 1, top_k 50, top_p 1);
checkpoints/generation_config.py reads the folder's values and where each came from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import torch

from attnlab.engine import names
from attnlab.engine.sampling_settings import (
    CONFIG_KEYS,
    DEFAULTS,
    FIELDS,
    GENERATION_KEY,
    MAX_SEED,
    SamplingSettings,
    model_defaults,
    sampling_problems,
    sources,
    with_model_defaults,
)

__all__ = [  # the settings are re-exported: callers that choose tokens name one module
    "CONFIG_KEYS",
    "DEFAULTS",
    "FIELDS",
    "GENERATION_KEY",
    "MAX_SEED",
    "SamplingSettings",
    "choose_next",
    "chooser",
    "draw",
    "kept_probs",
    "model_defaults",
    "sample_counts",
    "sampling_problems",
    "seeded",
    "sources",
    "step_chooser",
    "warped_logits",
    "with_model_defaults",
]


class Run(Protocol):
    """What a step's chooser reads of a run: a Trace, named by its method (trace.py imports the options, and
    they this module's settings)."""

    def read(self, name: str, index: int) -> torch.Tensor: ...


R = TypeVar("R", bound=Run)


def warped_logits(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """logits [V] -> the scores transformers' warpers leave: /T, then the top-k and top-p masks (-inf), float32
    on the CPU.  [V] -> [V]"""
    scores = logits.detach().to(device="cpu", dtype=torch.float32)[None]  # [1, V], as generate() casts them
    if settings.temperature != 1.0:
        scores = scores / settings.temperature  # TemperatureLogitsWarper
    if settings.top_k:
        k = min(max(int(settings.top_k), 1), scores.shape[-1])  # min_tokens_to_keep 1
        scores = scores.masked_fill(scores < torch.topk(scores, k)[0][..., -1, None], float("-inf"))  # TopK
    if settings.top_p < 1.0:
        ordered, order = torch.sort(scores, descending=False)  # [1, V] ascending
        cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)  # [1, V]
        drop = cumulative <= (1 - settings.top_p)  # TopPLogitsWarper's rule
        drop[..., -1:] = False  # the most probable token stays
        scores = scores.masked_fill(drop.scatter(1, order, drop), float("-inf"))
    return scores[0]  # [V]


def kept_probs(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """The distribution a token is drawn from: softmax of the warped scores, 0 outside the kept set, summing
    to 1 over it (the tempered probabilities renormalised).  [V] -> [V] float32 on the CPU"""
    return torch.softmax(warped_logits(logits, settings), dim=-1)


def draw(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One token id drawn from `probs` [V] (float32, CPU) as transformers' `_sample` draws it."""
    return int(torch.multinomial(probs[None], num_samples=1, generator=generator)[0, 0])


def seeded(seed: int) -> torch.Generator:
    """A CPU generator at `seed`: the same stream on every machine."""
    return torch.Generator(device="cpu").manual_seed(int(seed))


def choose_next(logits: torch.Tensor, settings: SamplingSettings, generator: torch.Generator | None = None) -> int:
    """The next token after one position's `logits` [V]: the argmax when sampling is off, else one draw from
    `kept_probs` with `generator` (a fresh one at the settings' seed when None)."""
    if not settings.sample:
        return int(logits.argmax())
    return draw(kept_probs(logits, settings), generator if generator is not None else seeded(settings.seed))


def chooser(options: Any) -> Callable[[torch.Tensor], int]:
    """The next-token rule of one generation with `options`: greedy, or draws from one generator seeded once,
    so the whole continuation follows from the seed (torch.manual_seed(seed) before transformers' generate()
    draws from the same stream)."""
    settings = SamplingSettings.of(options)
    generator = seeded(settings.seed) if settings.sample else None
    return lambda logits: choose_next(logits, settings, generator)


def step_chooser(
    options: Any, greedy: Callable[[R], tuple[int, str]], name: Callable[[int], str]
) -> Callable[[R], tuple[int, str]]:
    """What LiveModel.generate calls on each step's run: `greedy` (the argmax) when sampling is off, else a
    draw from the last position's logits with the generation's one seeded stream; (id, its token)."""
    if not options.sample:
        return greedy
    choose = chooser(options)

    def drawn(run: R) -> tuple[int, str]:
        token = choose(run.read(names.LOGITS, -1))  # [V], only the last position crosses to the host
        return token, name(token)

    return drawn


def sample_counts(probs: torch.Tensor, seed: int, n: int = 20) -> list[int]:
    """The tokens of `n` draws from one distribution `probs` [V], draw i with a generator at seed + i: what
    the next token would be under each of n seeds, from one run's logits (no other forward pass)."""
    return [draw(probs, seeded(seed + i)) for i in range(n)]
