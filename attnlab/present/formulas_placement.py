"""Where a layer's norms sit, for the add & norm stages (kinds "addnorm" and POST_NORM) of the models that place
them otherwise than pre- or post-norm: on the sub-layer's output (OLMo-2) or on both sides of it, a sandwich
(Gemma 2). Qt-free; HTML fragments like present/formulas.py's (which reads these)."""

from __future__ import annotations


def output_block_formula(residual: bool, norm: str = "LN") -> str:
    """The norm on the sub-layer's output (OLMo-2): y = x + Norm(F(x)); without the add when the residual is off."""
    if residual:
        return f"y = x + {norm}(F(x)) &nbsp; (the norm on the sub-layer's output, before the add; no norm before F)"
    return f"y = {norm}(F(x)) &nbsp; (residual off: no + x)"


def output_addnorm_texts(residual: bool, sub: str, n: int, where: str, word: str) -> tuple[str, tuple[str, str, str]]:
    """The add & norm panel's sentence and slot titles for a norm on the sub-layer's output, left to right as the
    data flows: F(x) | Norm(F(x)) | x + Norm(F(x))."""
    out = f"x + {word}({sub}(x))" if residual else f"{word}({sub}(x)) (residual off: no + x)"
    text = f"Norm on the output: {word} {n} of {where} comes AFTER the {sub} and BEFORE the add: {out}. " + (
        "The sub-layer reads x as it is; only what it adds to the residual stream is normalised." if residual else ""
    )
    return text, (f"{sub} output F(x)", f"{word}(F(x))", out)


def output_where(sub: str, word: str, residual: bool) -> str:
    """The add & norm page's sentence on where a norm on the sub-layer's output sits (OLMo-2)."""
    return f"The norm sits on the {sub}'s output in this run (as OLMo-2 was trained): " + (
        f"x + {word}({sub}(x)). Nothing normalises what the {sub} reads; its output is normalised before it is "
        "added, so the residual stream grows by a vector of controlled size."
        if residual
        else f"{word}({sub}(x))."
    )


def sandwich_block_formula(residual: bool, norm: str) -> str:
    """Gemma 2's sandwich: y = x + PostNorm(F(Norm(x)))."""
    inner = f"{norm}_post(F({norm}(x)))"
    return f"y = x + {inner} &nbsp; (a norm before and one after the sub-layer)" if residual else f"y = {inner}"


def sandwich_addnorm_texts(
    residual: bool, sub: str, n: int, where: str, word: str, second: bool = False
) -> tuple[str, tuple[str, str, str]]:
    """The add & norm panels of a sandwich (Gemma 2), left to right as the data flows: its first norm
    x | Norm(x) → sub-layer | x + Norm_post(F(Norm(x))), its second (`second`) F | Norm_post(F) | x + Norm_post(F)."""
    f = f"{sub}({word}(x))"
    out = f"x + {word}_post({f})" if residual else f"{word}_post({f}) (residual off: no + x)"
    if second:
        text = (
            f"Sandwich, second norm: {word}_post {n} of {where} normalises the {sub}'s output before it is added "
            f"to the residual stream: {out}."
        )
        return text, (f"{sub} output F = {f}", f"{word}_post(F)", out)
    text = (
        f"Sandwich: {word} {n} of {where} comes BEFORE the {sub}, and a second {word} (the next stage) normalises "
        f"its output before the add: {out}."
    )
    return text, ("x (block input)", f"{word}(x) → {sub}", out)


def sandwich_where(sub: str, word: str, residual: bool, second: bool) -> str:
    """The add & norm page's sentence for a sandwich's norms (Gemma 2)."""
    out = f"x + {word}_post({sub}({word}(x)))" if residual else f"{word}_post({sub}({word}(x)))"
    if second:
        return (
            f"The second norm of the sandwich: {word}_post normalises the {sub}'s output before it is added, {out}, "
            "so every sub-layer adds a vector of controlled size to the residual stream."
        )
    return f"Sandwich norms in this run (as Gemma 2 was trained): {word} before the {sub}, {word}_post after: {out}."
