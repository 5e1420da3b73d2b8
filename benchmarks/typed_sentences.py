"""Exact match of the bundled translation model on sentences as people type them, before and after the typed
input is read in the corpus form (engine/typed.py).

    PYTHONPATH=. python3 benchmarks/typed_sentences.py [--check-held-out] [--json]

The set is resources/training/typed-eval.json (hand-written, not used in training). "before" is the model
reading the text as typed; "after" what attnlab does: LiveModel.typed_form first. Exact: the same words as the
reference; "without the final mark": the same, a final "." or "?" aside (typed without one, the model may
leave it out). --check-held-out regenerates the 60000-pair corpus (minutes) and confirms that no sentence of the
set is among them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from attnlab.checkpoints import load_bundled
from attnlab.training.handwritten import score, sentence_key

TYPED_FILE = Path(__file__).resolve().parents[1] / "resources" / "training" / "typed-eval.json"


def typed_pairs() -> list[dict]:
    return list(json.loads(TYPED_FILE.read_text(encoding="utf-8"))["sentences"])


def figures(outputs: list[str], references: list[str]) -> dict:
    strict = score(outputs, references)
    loose = sum(sentence_key(o) == sentence_key(r) for o, r in zip(outputs, references, strict=True))
    return {
        "exact": strict["exact"],
        "n": strict["n"],
        "exact_match": strict["exact_match"],
        "exact_without_final_mark": loose,
        "word_accuracy": strict["word_accuracy"],
    }


def measure() -> dict:
    """Figures before (text as typed) and after (the corpus form), and the sentences still wrong after."""
    model = load_bundled("translation")
    pairs = typed_pairs()
    references = [p["fr"] for p in pairs]
    after = [model.translate(p["en"]) for p in pairs]
    kept = model.metadata
    model.metadata = {k: v for k, v in kept.items() if k != "corpus"}  # no corpus language: read as typed
    try:
        before = [model.translate(p["en"]) for p in pairs]
    finally:
        model.metadata = kept
    by_feature: dict[str, list[int]] = {}
    for p, out in zip(pairs, after, strict=True):
        by_feature.setdefault(p["feature"], [0, 0])[0] += sentence_key(out) == sentence_key(p["fr"])
        by_feature[p["feature"]][1] += 1
    wrong = [
        {"en": p["en"], "read_as": model.typed_form(p["en"], "src"), "output": out, "reference": p["fr"]}
        for p, out in zip(pairs, after, strict=True)
        if out.split() != p["fr"].split()
    ]
    return {
        "before": figures(before, references),
        "after": figures(after, references),
        "after_by_feature": {k: f"{v[0]}/{v[1]}" for k, v in by_feature.items()},
        "wrong_after": wrong,
    }


def held_out_problems() -> list[str]:
    """The set's sentences whose corpus form is among the bundled model's 60000 generated pairs."""
    from attnlab.engine.typed import typed_form
    from attnlab.training.corpus import generate_pairs

    seen = {sentence_key(p.src) for p in generate_pairs(60000, seed=0)}
    return [p["en"] for p in typed_pairs() if sentence_key(typed_form(p["en"], "English")) in seen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check-held-out", action="store_true", help="also check that no sentence was trained on")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = measure()
    if args.check_held_out:
        result["in_training"] = held_out_problems()
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    for when in ("before", "after"):
        f = result[when]
        print(
            f"{when:6}: exact {f['exact']}/{f['n']} ({f['exact_match']:.0%}); without the final mark "
            f"{f['exact_without_final_mark']}/{f['n']}; word accuracy {f['word_accuracy']:.1%}"
        )
    kinds = ", ".join(f"{k} {v}" for k, v in result["after_by_feature"].items())
    print(f"after, by kind (without the final mark): {kinds}")
    for w in result["wrong_after"]:
        print(f"  wrong: {w['en']!r} read as {w['read_as']!r} -> {w['output']!r} (reference {w['reference']!r})")
    if args.check_held_out:
        print(f"in training: {len(result['in_training'])} of {result['after']['n']} {result['in_training']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
