"""A model trained WITHOUT ÷√dₖ (T5: its initialisation scales W_Q instead): the ÷√dₖ stage shows the raw
scores and says that this is how the model was trained, not that a toggle switched scaling off. Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.present.explain_page import DK, page

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig

TITLE = "QKᵀ, no ÷ √dₖ (trained so)"
FORMULA = f"S′ = S = Q Kᵀ &nbsp; (this model never divides by √{DK})"
NOTE = (
    "This model was trained without ÷√dₖ (T5): these are the raw scores, and the ÷√dₖ toggle cannot add "
    "a division it never learned with."
)


def unscaled(config: ModelConfig) -> bool:
    """Whether the model was trained without ÷√dₖ (ModelConfig.trained_scale False)."""
    return not config.trained_scale


def retitled(config: ModelConfig, steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The site's (kind, title) steps with the ÷√dₖ stage titled as trained, for a model trained without it."""
    return [(k, TITLE if k == "scaled" else t) for k, t in steps] if unscaled(config) else steps


def scaled_page(where: str, dk: int, shapes: str) -> str:
    return page(
        f"No ÷ √dₖ · {where}",
        FORMULA,
        [
            f"Most Transformers divide the scores by √{DK} = √{dk} to keep the softmax soft. T5 does not: its "
            "weights were initialised so that Q Kᵀ already has the right spread (W_Q's initial values are "
            f"smaller by √{DK}), and it was trained that way.",
            "So this stage equals the one before it.",
        ],
        shapes,
    )
