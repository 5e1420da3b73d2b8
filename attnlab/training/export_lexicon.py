"""Write the word lists of the classroom models' training text to resources/lexicon/<model>.txt.

The app warns when a sentence uses words outside a classroom model's training lexicon ("out of domain"); it
reads these lists (attnlab.present.lexicon) instead of importing the training code. One lower-cased word per
line, sorted: every word of the text the model was trained on (the English side for the translation model,
since the app checks the sentence a person types; the French side for the French language model).

    python -m attnlab.training.export_lexicon            # rewrites both lists
"""

from __future__ import annotations

import sys
from pathlib import Path

from attnlab.checkpoints import load_bundled
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.fileio import atomic_write_text
from attnlab.training.recipes import RECIPES
from attnlab.training.train import split_corpus

LEXICON_DIR = Path(__file__).resolve().parents[2] / "resources" / "lexicon"
PUNCTUATION = frozenset(".,;:!?'\"()-")


def training_words(name: str) -> list[str]:
    """Sorted words of the side of the training corpus a person types for bundled model `name`: the corpus
    its metadata names (the split it was trained on), rebuilt."""
    recipe = RECIPES[name]
    corpus = load_bundled(name).metadata["corpus"]
    train, _test = split_corpus(
        int(corpus["n_pairs"]),
        int(corpus["seed"]),
        float(corpus["test_fraction"]),
        int(corpus["split_seed"]),
        int(corpus.get("version", 1)),
    )
    split = WordTokenizer(["<pad>", "<s>", "</s>", "<unk>"])._split
    texts = [p.tgt for p in train] if recipe.side == "tgt" else [p.src for p in train]
    return sorted({w for text in texts for w in split(text.lower()) if w not in PUNCTUATION})


def main(argv: list[str] | None = None) -> int:
    for name in RECIPES:
        words = training_words(name)
        path = LEXICON_DIR / f"{name}.txt"
        atomic_write_text(path, "\n".join(words) + "\n")
        print(f"{path}: {len(words)} words")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
