"""How long a toggle takes until the visible panel's data is on the host, on the CPU, at real sizes.

    python benchmarks/interactive_bench.py               # d768 12 heads 6+6, 512 tokens per side
    python benchmarks/interactive_bench.py --repeat 5    # on a shared machine: the quietest repeat
    python benchmarks/interactive_bench.py --tokens 256 --threads 1

Random weights, an encoder-decoder d_model 768, 12 heads, d_ff 3072, 6+6 layers, word vocabulary of 2000;
source and decoder input of `--tokens` tokens each (specials included). Rows:
  full run            a run with new text: forward + recording (what every toggle cost before)
  temperature         LiveModel.trace with another temperature (the previous run's entries are reused) and
                      the output panel's data: probs of the shown position
  temperature, all    the same, then the whole [T, V] probs on the host
  first heatmap       after a run, head 0 of the last cross-attention site's weights (derived on read: the
                      site's scores, scaled, masked and weights are computed once, then kept)
  head shown          then Session.set_view(head=h) (no run) and the heatmap's data: head h of that site
  head shown, on host the same once the site's weights have been read whole (what the head grid does)
  mask, last layer    a hand-made mask cell on dec.5.self after a run: re-runs from decoder layer 5
  mask, first dec layer  one on dec.0.cross: re-runs the decoder only (engine/runcache.py)
Each figure is the median of --runs; with --repeat the quietest repeat (lowest full-run median) is shown.
Targets (CPU): temperature <= 100 ms, head shown <= 50 ms. No painting is timed here (see ui_bench.py).
"""

from __future__ import annotations

import argparse
import os
import statistics

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import torch
from _common import timed_ms

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer

WORDS = [f"w{i}" for i in range(1990)]


def build(tokens: int) -> tuple[LiveModel, str, str]:
    torch.manual_seed(0)
    tok = WordTokenizer.train([" ".join(WORDS)])
    cfg = ModelConfig(
        src_vocab_size=tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        d_model=768,
        n_heads=12,
        d_ff=3072,
        n_encoder_layers=6,
        n_decoder_layers=6,
        max_len=tokens + 8,
    )
    gen = torch.Generator().manual_seed(1)
    pick = torch.randint(0, len(WORDS), (2, tokens - 1), generator=gen)
    src = " ".join(WORDS[i] for i in pick[0])
    tgt = " ".join(WORDS[i] for i in pick[1, : tokens - 1])
    return LiveModel(Transformer(cfg), tok, tok), src, tgt


def one_repeat(model: LiveModel, src: str, tgt: str, runs: int) -> dict[str, float]:
    from PySide6.QtCore import QCoreApplication

    from attnlab.session import Session

    _app = QCoreApplication.instance() or QCoreApplication([])
    session = Session()
    rows: dict[str, list[float]] = {
        k: []
        for k in (
            "full run",
            "temperature",
            "temperature, all",
            "first heatmap",
            "head shown",
            "head shown, on host",
            "mask, last layer",
            "mask, first dec layer",
        )
    }
    for i in range(runs):
        words = tgt.split()
        words[0] = WORDS[i % len(WORDS)]  # new text: a real run
        text = " ".join(words)
        rows["full run"].append(timed_ms(lambda text=text: model.trace(src, text, RunOptions())))
        temp = RunOptions(temperature=1.5 + 0.1 * i)

        def temperature_change(text=text, temp=temp):
            trace = model.trace(src, text, temp)
            trace.read("probs", -1)  # the output panel: the shown position's distribution

        rows["temperature"].append(timed_ms(temperature_change))
        hotter = temp.replace(temperature=9.0)
        rows["temperature, all"].append(timed_ms(lambda text=text, o=hotter: model.trace(src, text, o)["probs"]))
        trace = model.trace(src, text, temp)
        site = trace.sites()[-1]
        rows["first heatmap"].append(timed_ms(lambda t=trace, s=site: t.read(f"{s}.weights", 0)))

        def head_change(h, t=trace, s=site):
            session.set_view(head=h)
            t.read(f"{s}.weights", h)  # the heatmap's data

        rows["head shown"].append(timed_ms(lambda h=1 + i % 10: head_change(h)))
        _ = trace[f"{site}.weights"]
        rows["head shown, on host"].append(timed_ms(lambda h=2 + i % 10: head_change(h)))
        for row, site_name in (("mask, last layer", "dec.5.self"), ("mask, first dec layer", "dec.0.cross")):
            model.trace(src, text, RunOptions())  # the run before the click
            clicked = RunOptions().toggled_mask_cell(site_name, 1, 0)
            rows[row].append(timed_ms(lambda text=text, o=clicked: model.trace(src, text, o)))
    session.shutdown()
    return {k: statistics.median(v) for k, v in rows.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, src, tgt = build(args.tokens)
    model.trace(src, tgt)  # warm-up
    repeats = [one_repeat(model, src, tgt, args.runs) for _ in range(args.repeat)]
    best = min(repeats, key=lambda r: r["full run"])
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads; d768 12 heads 6+6, {args.tokens} tokens "
        f"per side; median of {args.runs} (quietest of {args.repeat} repeats)"
    )
    targets = {"temperature": 100.0, "head shown": 50.0}
    for name, ms in best.items():
        target = f"  (target <= {targets[name]:.0f} ms)" if name in targets else ""
        print(f"{name:<20} {ms:>9.1f} ms{target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
