"""Memory a recorded run holds: attnlab's trace against TransformerLens's run_with_cache, same model shape.

    python benchmarks/memory_bench.py                  # GPT-2-small shape, 512 tokens, both sides
    python benchmarks/memory_bench.py --tokens 1024
    PYTHONPATH=/path/to/transformer_lens python benchmarks/memory_bench.py   # TL installed elsewhere

The model: decoder-only, d_model 768, 12 layers, 12 heads, d_ff 3072, vocabulary 50257, learned positions,
GELU, pre-norm with a final LayerNorm, tied output; random weights (nothing is downloaded). Each side runs
in its own child process (so one side's allocator state cannot flatter the other) and reports:
  tensor bytes  the bytes of every distinct storage the result holds (attnlab: Trace.stored_bytes();
                TransformerLens: the cache's tensors plus the returned logits)
  RSS held      resident memory while holding the result minus before the run, after malloc_trim(0)
                (freed working memory handed back), so it is what the result keeps, as the OS sees it
  peak RSS      the child's peak resident memory, model included
TransformerLens is optional: if it cannot be imported the script compares against the figure in
docs/DESIGN.md (828 MiB for this shape at 512 tokens) and says so. TransformerLens 3.x (HookedTransformer)
is used; its imports of datasets/pandas/wandb/accelerate, which a forward pass never touches, are stubbed
when those packages are missing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys

import torch
from _common import rss_bytes, trim

D, LAYERS, HEADS, D_FF, VOCAB, CTX = 768, 12, 12, 3072, 50257, 1024
DESIGN_TL_MIB = 828.0  # DESIGN.md: TransformerLens run_with_cache, GPT-2 small shape, 512 tokens


def unique_bytes(tensors) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        key = t.untyped_storage().data_ptr()
        seen[key] = max(seen.get(key, 0), t.numel() * t.element_size())
    return sum(seen.values())


def gpt2_small_live():
    """attnlab's LiveModel of the GPT-2-small shape, random weights (seed 0), token ids read as numbers."""
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.hf_tokenizer import NumberTokenizer
    from attnlab.engine.live import LiveModel
    from attnlab.engine.model import Transformer

    torch.manual_seed(0)
    cfg = ModelConfig(
        arch="decoder-only",
        tgt_vocab_size=VOCAB,
        d_model=D,
        n_heads=HEADS,
        d_ff=D_FF,
        n_decoder_layers=LAYERS,
        activation="gelu",
        norm_first=True,
        final_norm=True,
        positional="learned",
        scale_embedding=False,
        max_len=CTX,
    )
    numbers = NumberTokenizer(VOCAB)
    return LiveModel(Transformer(cfg).eval(), None, numbers)


def run_attnlab(tokens: int, whole: bool) -> dict:
    """The trace as LiveModel.trace makes it (the app's and attnlab.load's path); `whole`: with every layer's
    tensors kept, as runs whose trace is at most LiveModel.lean_above bytes keep them (engine/replay.py)."""
    model = gpt2_small_live()
    if whole:
        model.lean_above = 1 << 62
    ids = torch.randint(4, VOCAB, (tokens,)).tolist()
    model.trace(tgt=ids[:8])  # warm: the first run's one-time allocations are not the trace's
    trim()
    before = rss_bytes()
    trace = model.trace(tgt=ids)
    trim()
    held = rss_bytes() - before
    return {
        "tensor_bytes": trace.stored_bytes(),
        "rss_held": held,
        "entries": len(trace),
        "kept": trace.info.get("kept", "whole"),
    }


def stub_unused_imports() -> None:
    """TransformerLens imports datasets/pandas/wandb/accelerate at import time; a forward never uses them."""
    import importlib.abc
    import importlib.machinery
    import importlib.util
    import types

    missing = tuple(m for m in ("datasets", "pandas", "wandb", "accelerate") if importlib.util.find_spec(m) is None)

    class Anything(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname.split(".")[0] in missing:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
            return None

        def create_module(self, spec):
            return Anything(spec.name)

        def exec_module(self, module):
            module.__path__ = []

    sys.meta_path.insert(0, Finder())


def gpt2_small_tl():
    """TransformerLens's HookedTransformer of the same shape, random weights (seed 0)."""
    stub_unused_imports()
    import warnings

    warnings.simplefilter("ignore")
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    torch.manual_seed(0)
    cfg = HookedTransformerConfig(
        n_layers=LAYERS,
        d_model=D,
        n_ctx=CTX,
        d_head=D // HEADS,
        n_heads=HEADS,
        d_mlp=D_FF,
        d_vocab=VOCAB,
        act_fn="gelu",
        normalization_type="LN",
    )
    return HookedTransformer(cfg).eval()


def run_transformer_lens(tokens: int) -> dict:
    model = gpt2_small_tl()
    ids = torch.randint(4, VOCAB, (1, tokens))  # [1, T]
    trim()
    before = rss_bytes()
    with torch.inference_mode():
        logits, cache = model.run_with_cache(ids)
    trim()
    held = rss_bytes() - before
    return {"tensor_bytes": unique_bytes([logits, *cache.values()]), "rss_held": held, "entries": len(cache)}


def child(side: str, tokens: int, threads: int) -> None:
    torch.set_num_threads(threads)
    result = run_attnlab(tokens, side == "whole") if side != "tl" else run_transformer_lens(tokens)
    result["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(result))


def measure(side: str, tokens: int, threads: int) -> dict | None:
    env = dict(os.environ, ATTNLAB_MALLOC_TUNING="0")  # the same allocator settings on both sides
    proc = subprocess.run(
        [sys.executable, __file__, "--child", side, "--tokens", str(tokens), "--threads", str(threads)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        print(f"[{side}] failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else '?'}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--child", choices=("attnlab", "whole", "tl"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.tokens, args.threads)
        return 0
    mib = 2**20
    print(
        f"GPT-2-small-shaped decoder-only model (d{D}, {LAYERS} layers, {HEADS} heads, vocab {VOCAB}), "
        f"{args.tokens} tokens, torch {torch.__version__}"
    )
    ours = measure("attnlab", args.tokens, args.threads)
    whole = measure("whole", args.tokens, args.threads)
    theirs = measure("tl", args.tokens, args.threads)
    print(f"{'':<34} {'tensor MiB':>11} {'RSS held MiB':>13} {'peak RSS MiB':>13} {'entries':>8}")
    lean_label = f"attnlab trace (lean: {ours['kept']})" if ours is not None else "attnlab trace (lean)"
    rows = ((lean_label, ours), ("attnlab, every layer kept", whole), ("TransformerLens cache", theirs))
    for label, r in rows:
        if r is not None:
            print(
                f"{label:<34} {r['tensor_bytes'] / mib:>11.1f} {r['rss_held'] / mib:>13.1f} "
                f"{r['peak_rss'] / mib:>13.1f} {r['entries']:>8}"
            )
    if ours is None:
        return 1
    if theirs is not None:
        print(
            f"attnlab / TransformerLens: tensor bytes {ours['tensor_bytes'] / theirs['tensor_bytes']:.2f}x, "
            f"RSS held {ours['rss_held'] / max(theirs['rss_held'], 1):.2f}x   (target <= 0.25x)"
        )
    else:
        print(
            f"TransformerLens not importable: against DESIGN.md's {DESIGN_TL_MIB:.0f} MiB, tensor bytes "
            f"{ours['tensor_bytes'] / mib / DESIGN_TL_MIB:.2f}x (target <= 0.25x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
