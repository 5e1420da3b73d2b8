"""`attnlab eval CHECKPOINT`: held-out figures of a classroom model (on the split its training never saw).

translation: exact match of greedy translation and cross-attention alignment accuracy per layer and head;
language: next-token accuracy and perplexity.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.commands.refusal import refuse

if TYPE_CHECKING:
    from attnlab.checkpoints.additive import AdditiveModel
    from attnlab.engine.live import LiveModel


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "checkpoint", help="a classroom checkpoint (.safetensors), or bundled:translation / bundled:language"
    )
    parser.add_argument("--n", type=int, default=None, help="use the first N held-out sentences (default: all of them)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="CPU threads for PyTorch (default: 2; 1 is faster on a machine busy with other work)",
    )
    parser.add_argument(
        "--save",
        action="store_true",
        help="also store the figures in the checkpoint's metadata (re-saving it) and in "
        "<folder>/training/<name>-eval.json",
    )


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def summary_text(figures: dict) -> str:
    if figures.get("kind") == "language":
        return (
            f"held-out French sentences: {figures['n_sentences']} ({figures['n_tokens']} tokens)\n"
            f"  next-token accuracy {_pct(figures['next_token_accuracy'])}, "
            f"perplexity {figures['perplexity']:.3f}"
        )
    lines = [
        f"held-out sentence pairs: {figures['n']}",
        f"  exact match (greedy translation): {_pct(figures['exact_match'])} "
        f"({_pct(figures['exact_match_pieces'])} with the reference's own pieces)",
    ]
    for key, part in figures.get("exact_match_by_source_length", {}).items():
        lines.append(f"    {key.replace('_', ' ')} (source pieces + </s>): {_pct(part['exact_match'])} of {part['n']}")
    if "n_seen_in_gru_training" in figures:
        lines.insert(
            1,
            f"  (the translation model's {figures['n_translation_held_out']} held-out pairs less the "
            f"{figures['n_seen_in_gru_training']} the GRU model trained on)",
        )
    lines += _alignment_lines(figures["alignment"], additive=figures.get("attention") == "additive")
    hand = figures.get("handwritten")
    if hand:
        lines.append(
            f"  hand-written sentences: {hand['exact']}/{hand['n']} exact, word accuracy {_pct(hand['word_accuracy'])}"
        )
    teaching = figures.get("teaching_examples")
    if teaching:
        lines.append(f"  teaching examples (in training): {teaching['correct']}/{teaching['n']} correct")
    for err in figures.get("examples_of_errors", [])[:3]:
        lines.append(f"  e.g. {err['src']!r} -> {err['output']!r} (reference {err['reference']!r})")
    return "\n".join(lines)


_READINGS = (
    ("predicting", "position predicting the word's first piece (standard)"),
    ("predicting_after_elision", "same, after an elided prefix (l', n', qu')"),
    ("input", "position reading the word's first piece as input"),
)


def _alignment_lines(al: dict, additive: bool) -> list[str]:
    """Layers and heads are counted from 1, as the app counts them (the JSON keeps 0-based indices)."""
    kind = "additive attention" if additive else "cross-attention"
    lines = [f"  {kind} alignment over {al['n_aligned_words']} content words:"]
    for key, label in _READINGS:
        best = al[key]["best"]
        if additive:
            lines.append(f"    {label}: {_pct(best['accuracy'])}")
            continue
        per_layer = ", ".join(f"layer {i}: {_pct(a)}" for i, a in enumerate(al[key]["layer_head_average"], 1))
        lines.append(
            f"    {label}: best head layer {best['layer'] + 1} head {best['head'] + 1} "
            f"{_pct(best['accuracy'])}; head-average {per_layer}"
        )
    return lines


def _load(spec: str) -> tuple[LiveModel | AdditiveModel, Path]:
    """(model, path): a classroom Transformer, or the additive-attention GRU model (bundled:bahdanau or its
    file)."""
    from attnlab.checkpoints import load_bundled, load_checkpoint
    from attnlab.checkpoints.additive import BUNDLED_NAME, bundled_additive_path, is_additive_file, load_additive
    from attnlab.checkpoints.bundled import bundled_path

    if spec == f"bundled:{BUNDLED_NAME}":
        return load_additive(), bundled_additive_path()
    if spec.startswith("bundled:"):
        name = spec.split(":", 1)[1]
        return load_bundled(name), bundled_path(name)
    if is_additive_file(spec):
        return load_additive(spec), Path(spec)
    return load_checkpoint(spec), Path(spec)


def run(args: argparse.Namespace) -> int:
    from attnlab.checkpoints import CheckpointError
    from attnlab.engine.live import LiveModel
    from attnlab.training.classroom import save_additive_figures, save_with_figures
    from attnlab.training.evaluate import evaluate

    if args.n is not None and args.n < 1:
        return refuse("attnlab eval", "--n must be at least 1")
    if args.threads < 1:
        return refuse("attnlab eval", "--threads must be at least 1")
    import torch

    torch.set_num_threads(args.threads)
    try:
        model, path = _load(args.checkpoint)
        figures = evaluate(model, args.n)
    except (CheckpointError, ValueError) as e:
        return refuse("attnlab eval", e)
    print(json.dumps(figures, indent=2, ensure_ascii=False) if args.json else summary_text(figures))
    if args.save:
        if path.suffix != ".safetensors":
            return refuse("attnlab eval", "--save needs a .safetensors checkpoint")
        if not isinstance(model, LiveModel):  # the additive GRU model: its file keeps its weights, the figures
            # go beside it (evaluate measured it as "attention": "additive")
            written = save_additive_figures(model, path, figures)
            print(f"figures stored in {written}", file=sys.stderr)
            return 0
        written = save_with_figures(model, path, figures)
        print(f"figures stored in {path} and {written}", file=sys.stderr)
    return 0
