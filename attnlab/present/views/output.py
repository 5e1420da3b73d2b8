"""The output stage as plain data: at one position, the top-k logits or next-token probabilities with their
token names, the position labels for the chooser, the title and note, and — when heads are ablated — the
probabilities before → after."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.ablation import (
    BASELINE_PROBS,
    DistributionChange,
    ablation_words,
    change_text,
    distribution_change,
)
from attnlab.present.facts import array, row_labels, run_temperature
from attnlab.present.labels import elide_label, printable_label
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MessageView
from attnlab.present.views.output_bars import OutputView, top_k, value_text
from attnlab.present.views.output_sampling import SamplingCut, sampling_cut
from attnlab.present.views.replaced import replaced_view

MASK_TOKENS = ("[MASK]", "<mask>")  # BERT / DistilBERT, RoBERTa
SPECIAL_IDS_ORDER = ("<pad>", "<s>", "</s>", "<unk>")  # ids 0..3 in every attnlab tokenizer


def known_tokens(trace: Trace) -> Callable[[int], str]:
    """Names for output ids without a vocabulary: the specials and the tokens seen in this run, else '#id'."""
    known: dict[int, str] = dict(enumerate(SPECIAL_IDS_ORDER))
    for side in names.SIDES:
        tokens_name, ids_name = names.side_entry(side, "tokens"), names.side_entry(side, "ids")
        if tokens_name in trace and ids_name in trace:
            ids = (int(i) for i in trace.numpy(ids_name))
            known.update(zip(ids, trace[tokens_name], strict=False))
    return lambda i: str(known.get(i, f"#{i}"))


def position_labels(trace: Trace, n_pos: int, name: Callable[[int], str]) -> list[str]:
    """A printable label per output position: 'input → predicted' on the decoder side (`row_labels`, the rule
    every decoder panel uses), else the source token; '?' where the trace has no token for a position."""
    side = "tgt" if names.side_entry("tgt", "tokens") in trace else "src"
    toks = list(trace.get(names.side_entry(side, "tokens")) or [])
    labels = row_labels(trace, side, len(toks), name) or []
    return [printable_label(labels[i]) if i < len(labels) else "?" for i in range(n_pos)]


def mask_position(trace: Any, default: int) -> int:
    """Where a masked-LM's prediction is worth showing: the first [MASK] of an encoder-only input (`trace`:
    a Trace or any mapping of trace names)."""
    if names.side_entry("tgt", "tokens") in trace or names.side_entry("src", "tokens") not in trace:
        return default
    tokens = list(trace[names.side_entry("src", "tokens")])
    return next((i for i, t in enumerate(tokens) if t in MASK_TOKENS), default)


def output_heading(trace: Trace, position: int, kind: str, here: str) -> str:
    """The title; `here` is the position's label (`position_labels`)."""
    tgt_tokens = names.side_entry("tgt", "tokens")
    decoder = tgt_tokens in trace
    toks = trace.get(tgt_tokens if decoder else names.side_entry("src", "tokens")) or []
    what = "logits" if kind == names.LOGITS else "probabilities"
    if decoder:
        context = " ".join(printable_label(t) for t in toks[: position + 1])
        return f"Next-token {what} at position {position}: {here} (after “{elide_label(context, 60)}”)"
    return f"Predicted token {what} at position {position} (“{here}”)"


def output_note(
    kind: str, k: int, vocab: int, temperature: float | None, best: str, decoder: bool, sampled: bool = False
) -> str:
    """The sentence under the bars; an encoder-only model's best bar is a fill-in guess, nothing is decoded."""
    temp = f"temperature T = {temperature:.3g}" if temperature is not None else "temperature unknown"
    if kind == names.LOGITS:
        return (
            f"Top {k} of {vocab} raw scores: the final vector times the output matrix, one "
            f"number per vocabulary entry. softmax(logits / T) turns them into probabilities "
            f"({temp}). "
            f"The highest (orange) is “{best}”."
        )
    pick = "Greedy decoding picks the orange bar" if decoder else "The model's best fill-in is the orange bar"
    if sampled:
        pick = "A draw picks any kept bar with its probability; the most probable is the orange bar"
    return (
        f"Top {k} of {vocab} probabilities = softmax(logits / T), {temp}: lower T sharpens the "
        f"distribution, higher T flattens it. {pick}, “{best}”."
    )


def capped_note(trace: Trace, position: int) -> str:
    """Gemma 2's final soft-capping: the cap and how far this position's raw logits reached."""
    cap = trace.config.final_softcap
    if not cap or names.UNCAPPED_LOGITS not in trace:
        return ""
    raw = array(trace, names.UNCAPPED_LOGITS)[position]  # [V]
    return (
        f" These logits are soft-capped: {cap:g} · tanh(z / {cap:g}) (final_logit_softcapping); before the cap "
        f"this position's reached {raw.min():.2f} … {raw.max():.2f}."
    )


def output_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> OutputView | MessageView:
    kind = stage.kind
    if kind not in trace:
        return MessageView(kind, f"The {kind} are not in this run.")
    if trace.config.replaced_head:  # ELECTRA's discriminator: P(replaced) per token, not a vocabulary
        return replaced_view(trace, stage, display)
    table = array(trace, kind)  # [T, V]; the kind is the trace name (names.LOGITS or names.PROBS)
    n_pos = table.shape[0]
    position = min(max(int(display.position), -n_pos), n_pos - 1) % n_pos
    if display.position == -1:  # an encoder-only model's first [MASK], if the input has one
        position = mask_position(trace, position)
    row = table[position]  # [V]
    ids = top_k(row, display.top_k)
    values = row[ids]  # [k]
    name = vocab if vocab is not None else known_tokens(trace)
    labels = [name(int(i)) for i in ids]
    cut = sampling_cut(trace, position, ids, name)  # None unless the run samples
    texts = [value_text(float(v), kind) for v in values]
    if cut is not None and kind == names.PROBS:  # the bars: the distribution a draw is made from
        values, texts = cut.values, cut_texts(cut)
    positions = position_labels(trace, n_pos, name)
    temperature = run_temperature(trace)
    decoder = names.side_entry("tgt", "tokens") in trace
    ablation, change = ablation_change(trace, position, display.top_k, name)
    return OutputView(
        kind=kind,
        position=position,
        positions=[f"{i}: {label}" for i, label in enumerate(positions)],
        ids=[int(i) for i in ids],
        labels=labels,
        values=values,
        value_texts=texts,
        row=row,
        temperature=temperature,
        title=output_heading(trace, position, kind, positions[position]),
        note=output_note(kind, len(ids), row.shape[0], temperature, labels[0], decoder, cut is not None)
        + capped_note(trace, position)
        + (cut.text() if cut is not None else ""),
        ablation=ablation,
        change=change,
        sampling=cut,
    )


def cut_texts(cut: SamplingCut) -> list[str]:
    """Each bar's value after the cut with its value before: "45.0% (31.2% before)", "cut (0.4% before)"."""
    return [
        f"{after:.1%} ({before:.1%} before)" if kept else f"cut ({before:.1%} before)"
        for after, before, kept in zip(cut.values, cut.raw, cut.kept, strict=True)
    ]


def ablation_change(
    trace: Trace, position: int, k: int, name: Callable[[int], str]
) -> tuple[str, DistributionChange | None]:
    """With ablated heads: the next-token probabilities before (no ablation) → after, and the flip."""
    before = trace.info.get(BASELINE_PROBS)
    ablate = trace.options.ablate
    if before is None or not ablate or names.PROBS not in trace:
        return "", None
    after = array(trace, names.PROBS)[position]  # [V]
    change = distribution_change(np.asarray(before[position], dtype=np.float64), after.astype(np.float64), k)
    return f"Ablated: {ablation_words(ablate)}. Probabilities before → after: {change_text(change, name)}", change
