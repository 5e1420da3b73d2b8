"""Issue 23's GPU targets: a Llama-3-8B-shaped bf16 folder at 8,192 tokens, a Llama-3.2-1B shape at 32,768.

    python benchmarks/gpu_scale_bench.py                      # needs a CUDA GPU (H100: ~16 GB folder in /tmp)
    python benchmarks/gpu_scale_bench.py --only 8b --keep /tmp/llama8b
    python benchmarks/gpu_scale_bench.py --smoke              # tiny shapes on the CPU: checks the script only

For each shape the benchmark writes a folder like save_pretrained's (config.json, bf16 shards, the index;
random weights N(0, 0.02), norms 1; generated on the GPU when there is one) and runs two child processes,
so one side's allocator cannot flatter the other:
  hf        transformers' LlamaForCausalLM from that folder, bf16, attn_implementation="sdpa", on the GPU:
            the plain forward of the input (median of 3 after a warm-up)
  attnlab   attnlab.load(folder) and, as the app runs them (LiveModel.trace; lean traces, engine/replay.py):
              open        load + a 16-token trace (the weights placed on the GPU, kernels warmed)
              trace 1/2   two different inputs of N tokens, the first held while the second runs (as the app
                          holds the trace on screen)
              peak        torch.cuda.max_memory_allocated above the weights during trace 1, against the
                          weights' bytes; and during trace 2 with trace 1 held (it stays on the GPU when
                          both fit, else it moves to the host first: LiveModel._fits_beside)
              one head    the last layer's head 0 attention weights [N, N] on the host (`trace.read`)
              toggles     scaling off; then, scaling still off as a person leaves it, a blocked cell on the last
                          layer's mask (re-runs from that layer; "resumed from" says where it started): each
                          run plus the first panel's data (present.stages.warm_stage), against trace 1
Targets (H100, 8B at 8,192): open <= 30 s; trace <= 1.5x the hf forward; peak <= weights + 40 %; one head
<= 100 ms; toggle -> panel data <= 2x the trace; trace 2 <= 1.2x trace 1. 1B at 32,768: the trace completes.
Prints one line per figure and a JSON line per shape.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from _common import ROOT, sync, timed
from big_model_bench import CONFIG as LLAMA_3B
from big_model_bench import SHARD_BYTES, shapes
from safetensors.torch import save_file

LLAMA_8B = dict(
    LLAMA_3B,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=128256,
    max_position_embeddings=8192,
    rope_scaling=None,
    tie_word_embeddings=False,
)
LLAMA_1B = dict(
    LLAMA_3B, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, head_dim=64
)
SMOKE = dict(
    LLAMA_3B,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=1000,
    bos_token_id=1,
    eos_token_id=2,
)
SHAPES = {"8b": (LLAMA_8B, 8192), "1b": (LLAMA_1B, 32768)}


def write_folder(folder: Path, cfg: dict, device: str) -> int:
    """config.json, bf16 shards of random weights and their index; returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    tensor_shapes = dict(shapes(cfg))
    if not cfg.get("tie_word_embeddings"):
        tensor_shapes["lm_head.weight"] = (cfg["vocab_size"], cfg["hidden_size"])
    generator = torch.Generator(device=device).manual_seed(0)
    weight_map, shard, shard_bytes, total, n = {}, {}, 0, 0, 0

    def flush() -> None:
        nonlocal shard, shard_bytes, n
        if shard:
            n += 1
            file = f"model-{n:05d}.safetensors"
            save_file(shard, str(folder / file), metadata={"format": "pt"})
            weight_map.update({name: file for name in shard})
            shard, shard_bytes = {}, 0

    for name, shape in tensor_shapes.items():
        if len(shape) == 1:
            tensor = torch.ones(shape, dtype=torch.bfloat16)
        else:
            tensor = (torch.randn(shape, generator=generator, device=device) * 0.02).to(torch.bfloat16).cpu()
        if shard_bytes + tensor.numel() * 2 > SHARD_BYTES:
            flush()
        shard[name] = tensor
        shard_bytes += tensor.numel() * 2
        total += tensor.numel() * 2
    flush()
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return total


def prompt(tokens: int, seed: int, vocab: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(10, vocab - 10, (tokens,), generator=generator).tolist()


def child_hf(folder: str, tokens: int, device: str) -> dict:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16, attn_implementation="sdpa")
    model = model.to(device).eval()
    ids = torch.tensor([prompt(tokens, 1, model.config.vocab_size)], device=device)
    times = []
    with torch.inference_mode():
        for i in range(4):
            sync(device)
            start = time.perf_counter()
            model(ids)
            sync(device)
            if i:
                times.append(time.perf_counter() - start)
    return {"forward_s": statistics.median(times)}


def child_attnlab(folder: str, tokens: int, device: str, lean_above: int | None = None) -> dict:
    import attnlab
    from attnlab.engine import names
    from attnlab.engine.options import RunOptions
    from attnlab.present.stages import pick_stage, stages_for, warm_stage

    options = RunOptions(device=device)
    start = time.perf_counter()
    model = attnlab.load(folder)
    if lean_above is not None:  # --smoke: the tiny model's trace is recorded lean too, as a big one's is
        model.lean_above = lean_above
    vocab = model.config.out_vocab_size
    model.trace(tgt=prompt(16, 0, vocab), options=options)
    sync(device)
    open_s = time.perf_counter() - start
    weights = sum(p.numel() * p.element_size() for p in model.module.checkpoint_tensors().values())
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    first, first_s = timed(lambda: model.trace(tgt=prompt(tokens, 1, vocab), options=options), device)
    peak = torch.cuda.max_memory_allocated() - base if device == "cuda" else 0
    second, second_s = timed(lambda: model.trace(tgt=prompt(tokens, 2, vocab), options=options), device)
    peak_both = torch.cuda.max_memory_allocated() - base if device == "cuda" else 0
    del first
    last_site = second.sites()[-1]
    _head, head_s = timed(lambda: second.read(names.site_entry(last_site, "weights"), 0), device)

    resumed: dict[str, str] = {}

    def toggle(label: str, changed: RunOptions) -> float:
        def run() -> None:
            trace = model.trace(tgt=prompt(tokens, 2, vocab), options=changed)
            resumed[label] = str(trace.info.get("resumed_from", "a full run"))
            stage = pick_stage(stages_for(trace), f"{names.site_entry(last_site, 'weights')}")
            warm_stage(trace, stage or stages_for(trace)[0])

        return timed(run, device)[1]

    scale_off = options.replace(scale=False)  # each toggle changes one thing from the run before it
    toggles = {
        "scale off": toggle("scale off", scale_off),
        "mask cell, last layer": toggle("mask cell, last layer", scale_off.toggled_mask_cell(last_site, tokens - 1, 0)),
    }
    return {
        "open_s": open_s,
        "weights_bytes": weights,
        "trace_s": [first_s, second_s],
        "peak_above_weights_bytes": peak,
        "peak_with_first_held_bytes": peak_both,
        "kept": str(second.info.get("kept", "")),
        "trace_stored_bytes": second.stored_bytes(),
        "one_head_s": head_s,
        "toggles_s": toggles,
        "toggles_resumed_from": resumed,
    }


def run_child(side: str, folder: Path, tokens: int, device: str, smoke: bool = False) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", side, str(folder), str(tokens), device, "0" if smoke else "-"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(name: str, tokens: int, ours: dict, theirs: dict) -> None:
    if "failed" in ours:
        print(f"{name} at {tokens:,} tokens: attnlab failed: {ours['failed']}")
        return
    gib = 2**30
    t1, t2 = ours["trace_s"]
    print(f"{name} at {tokens:,} tokens: open {ours['open_s']:.1f} s (target <= 30 s)")
    print(f"  trace 1 / 2: {t1:.2f} s / {t2:.2f} s, second / first {t2 / t1:.2f}x (target <= 1.2x)")
    if "forward_s" in theirs:
        print(
            f"  transformers sdpa forward {theirs['forward_s']:.2f} s: trace / forward {t1 / theirs['forward_s']:.2f}x"
        )
    else:
        print(f"  transformers: {theirs.get('failed')}")
    weights, peak = ours["weights_bytes"], ours["peak_above_weights_bytes"]
    print(
        f"  peak above the weights, trace 1: {peak / gib:.2f} GiB = {100 * peak / weights:.0f} % of the weights' "
        f"{weights / gib:.2f} GiB (target <= 40 %); the trace stores {ours['trace_stored_bytes'] / gib:.2f} GiB"
    )
    both = ours["peak_with_first_held_bytes"]
    print(f"  peak during trace 2 with trace 1 held: {both / gib:.2f} GiB = {100 * both / weights:.0f} %")
    print(f"  one head's map on the host {1000 * ours['one_head_s']:.0f} ms (target <= 100 ms)")
    for label, seconds in ours["toggles_s"].items():
        start = ours["toggles_resumed_from"][label]
        print(
            f"  toggle ({label}; {start}) -> panel data {seconds:.2f} s = {seconds / t1:.2f}x the trace (target <= 2x)"
        )
    print(json.dumps({"shape": name, "tokens": tokens, "attnlab": ours, "transformers": theirs}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SHAPES), action="append")
    parser.add_argument("--keep", type=Path, help="write (or reuse) the folder here and keep it (one shape)")
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU: checks the script only")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        side, folder, tokens, device, lean_above = args.child
        if side == "hf":
            print(json.dumps(child_hf(folder, int(tokens), device)))
        else:
            print(
                json.dumps(child_attnlab(folder, int(tokens), device, None if lean_above == "-" else int(lean_above)))
            )
        return 0
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    if device == "cpu" and not args.smoke:
        print("no CUDA GPU: run with --smoke to check the script on the CPU")
        return 1
    todo = {"smoke": (SMOKE, 256)} if args.smoke else {k: SHAPES[k] for k in (args.only or sorted(SHAPES))}
    for name, (cfg, tokens) in todo.items():
        folder = args.keep or Path(tempfile.mkdtemp(prefix=f"attnlab-{name}-"))
        try:
            if not (folder / "model.safetensors.index.json").is_file():
                written, seconds = timed(lambda: write_folder(folder, cfg, device), device)  # noqa: B023
                print(f"{name}: wrote {written / 1e9:.2f} GB in {seconds:.0f} s to {folder}")
            theirs = run_child("hf", folder, tokens, device)
            ours = run_child("attnlab", folder, tokens, device, args.smoke)
            report(name, tokens, ours, theirs)
        finally:
            if args.keep is None:
                shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
