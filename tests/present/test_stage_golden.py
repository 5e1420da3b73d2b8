"""The stage list of the classroom models is pinned: the bundled translation (encoder-decoder) and language
(decoder-only) models and a classroom encoder-only model keep exactly these stage keys and titles, in order,
whatever imported architectures add (tests/golden/stages_*.txt, one 'key | title' line per stage; written
from the code before imported-model stages existed). Regenerate only for an intended change:
`python -m tests.present.test_stage_golden`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from attnlab.checkpoints import load_bundled
from attnlab.engine.options import RunOptions
from attnlab.present.stages import stages_for

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RUNS = {  # golden file stem: (bundled model, source text, decoder input)
    "stages_translation": ("translation", "the black cat sees the dog", "le chat"),
    "stages_language": ("language", "the black cat sees the", None),
}


def encoder_only_trace():
    import torch

    from attnlab.engine.config import ModelConfig
    from attnlab.engine.live import LiveModel
    from attnlab.engine.model import Transformer
    from attnlab.engine.tokenizer import WordTokenizer

    torch.manual_seed(0)
    tok = WordTokenizer.train(["the black cat sees the small dog"])
    cfg = ModelConfig(
        arch="encoder-only",
        src_vocab_size=tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        max_len=32,
    )
    return LiveModel(Transformer(cfg), tok, tok).trace("the black cat sees the dog", None, RunOptions())


def stage_lines(stem: str) -> list[str]:
    if stem == "stages_encoder_only":
        trace = encoder_only_trace()
    else:
        name, src, tgt = RUNS[stem]
        model = load_bundled(name)
        src_text, tgt_text = (None, src) if not model.config.has_encoder else (src, tgt)
        trace = model.trace(src_text, tgt_text, RunOptions())
    return [f"{s.key} | {s.title}" for s in stages_for(trace)]


STEMS = [*RUNS, "stages_encoder_only"]


@pytest.mark.parametrize("stem", STEMS)
def test_classroom_stage_lists_are_unchanged(stem):
    expected = (GOLDEN / f"{stem}.txt").read_text(encoding="utf-8").splitlines()
    assert stage_lines(stem) == expected


if __name__ == "__main__":
    for stem in STEMS:
        (GOLDEN / f"{stem}.txt").write_text("\n".join(stage_lines(stem)) + "\n", encoding="utf-8")
    sys.exit(0)
