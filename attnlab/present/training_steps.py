"""Words for the training-step slider: what its label, the banner and the hint under it say. Plain Python."""

from __future__ import annotations

CROSS_HINT = (
    "Slide through training: at step 0 each French position spreads its attention evenly over the English "
    "words; as the loss falls it settles on the word it translates, and a diagonal appears (bent where French "
    "reorders the words, as in le chat noir)."
)
SELF_HINT = (
    "Slide through training: at step 0 every position attends almost evenly; as the loss falls, the heads "
    "pick out the neighbours and words they need."
)


def hint_text(site: str | None) -> str:
    """The sentence shown under the slider on an attention stage (cross-attention: the diagonal)."""
    if site is None:
        return ""
    return CROSS_HINT if site.endswith(".cross") else SELF_HINT


def step_label(step: int, final_step: int, loss: float | None) -> str:
    """'step 400 of 3000 · training loss 2.73' ('… (trained)' for the final step)."""
    text = f"step {step} of {final_step}" + (" (trained)" if step == final_step else "")
    return text + (f" · training loss {loss:.2f}" if loss is not None else "")


def step_banner(step: int | None, final_step: int) -> str:
    """The banner line while a snapshot is shown ('' for the trained model)."""
    if step is None or step == final_step:
        return ""
    return (
        f"Weights at training step {step} of {final_step}: not the trained model "
        "(move the training-step slider to its right end for it)."
    )
