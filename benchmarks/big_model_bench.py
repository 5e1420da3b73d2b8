"""A Llama-3.2-3B-shaped bf16 folder (random weights written here) opened and traced on the CPU (issue 23).

    python benchmarks/big_model_bench.py                 # 16 tokens; the folder under /tmp, deleted after
    python benchmarks/big_model_bench.py --tokens 64 --keep /tmp/llama3b

The folder: config.json as Llama-3.2-3B's (hidden 3072, 28 layers, 24 heads, 8 KV heads, intermediate 8192,
vocabulary 128256, tied embeddings, rope_scaling llama3, 131072 positions, torch_dtype bfloat16) and random
bf16 weights (N(0, 0.02), norms 1) written shard by shard with safetensors.torch.save_file, with the index a
sharded save has (~6.4 GB). A child process opens it (attnlab.load: memory-mapped, held in bf16) and traces
`--tokens` token ids; it reports the open time, the trace time, its peak RSS (VmHWM, model included), the
RSS it holds after the trace and the trace's stored bytes. Target (issue 23): peak RSS <= 9 GiB.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import save_file

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 28,
    "num_attention_heads": 24,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "tie_word_embeddings": True,
    "hidden_act": "silu",
    "attention_bias": False,
    "mlp_bias": False,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "torch_dtype": "bfloat16",
}
SHARD_BYTES = 2_000_000_000


def shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """The tensors of a LlamaForCausalLM with tied embeddings, as save_pretrained names them."""
    d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    dk = cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * dk, cfg["num_key_value_heads"] * dk
    out = {"model.embed_tokens.weight": (v, d)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out |= {
            p + "input_layernorm.weight": (d,),
            p + "self_attn.q_proj.weight": (q, d),
            p + "self_attn.k_proj.weight": (kv, d),
            p + "self_attn.v_proj.weight": (kv, d),
            p + "self_attn.o_proj.weight": (d, q),
            p + "post_attention_layernorm.weight": (d,),
            p + "mlp.gate_proj.weight": (f, d),
            p + "mlp.up_proj.weight": (f, d),
            p + "mlp.down_proj.weight": (d, f),
        }
    out["model.norm.weight"] = (d,)
    return out


def write_folder(folder: Path, cfg: dict) -> int:
    """config.json, the shards and their index; returns the bytes of weights written."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    generator = torch.Generator().manual_seed(0)
    groups: list[dict[str, tuple[int, ...]]] = [{}]
    size = 0
    for name, shape in shapes(cfg).items():
        n = 2 * int(torch.Size(shape).numel())
        if size + n > SHARD_BYTES and groups[-1]:
            groups.append({})
            size = 0
        groups[-1][name] = shape
        size += n
    weight_map, total = {}, 0
    for i, group in enumerate(groups):
        file = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        tensors = {}
        for name, shape in group.items():
            if len(shape) == 1:
                tensors[name] = torch.ones(shape, dtype=torch.bfloat16)
            else:
                tensors[name] = (torch.randn(shape, generator=generator) * 0.02).to(torch.bfloat16)
            total += tensors[name].numel() * 2
            weight_map[name] = file
        save_file(tensors, str(folder / file), metadata={"format": "pt"})
        del tensors
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return total


CHILD = """
import json, sys, time
t0 = time.perf_counter()
import torch
import attnlab
from attnlab.engine import names
torch.set_num_threads(2)
folder, tokens = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
m = attnlab.load(folder)
open_s = time.perf_counter() - t
dtypes = sorted({str(p.dtype) for p in m.module.parameters()})
ids = [(i * 7919) % 128000 for i in range(tokens)]
t = time.perf_counter()
trace = m.trace(tgt=ids)
trace_s = time.perf_counter() - t
logits = trace[names.LOGITS]
status = open("/proc/self/status").read()
kib = lambda key: int(status.split(key + ":")[1].split()[0])
print(json.dumps({"open_s": open_s, "trace_s": trace_s, "peak_rss_kib": kib("VmHWM"), "rss_kib": kib("VmRSS"),
                  "rss_file_kib": kib("RssFile"), "rss_anon_kib": kib("RssAnon"), "trace_bytes": trace.stored_bytes(),
                  "dtypes": dtypes, "run_dtype": trace.options.dtype, "logits": list(logits.shape),
                  "finite": bool(torch.isfinite(logits).all())}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--keep", type=Path, default=None, help="write (or reuse) the folder here and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="attnlab-llama3b-", dir="/tmp"))
    try:
        if not (folder / "model.safetensors.index.json").is_file():
            start = time.perf_counter()
            total = write_folder(folder, CONFIG)
            print(f"write: {time.perf_counter() - start:.1f} s, {total / 1e9:.2f} GB of bf16 weights in {folder}")
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(folder), str(args.tokens)],
            capture_output=True,
            text=True,
            cwd=root,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        )
        if done.returncode != 0:
            print(done.stderr[-3000:])
            raise SystemExit(f"the child failed (exit {done.returncode})")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        gib = 1 / 2**20
        print(f"open: {r['open_s']:.1f} s (weights held as {', '.join(r['dtypes'])}; the run in {r['run_dtype']})")
        print(f"trace of {args.tokens} tokens: {r['trace_s']:.1f} s (logits {r['logits']}, finite {r['finite']})")
        print(f"peak RSS of the child (open + trace): {r['peak_rss_kib'] * gib:.2f} GiB (target <= 9 GiB)")
        print(
            f"held after the trace: RSS {r['rss_kib'] * gib:.2f} GiB ({r['rss_file_kib'] * gib:.2f} GiB mapped "
            f"from the shards, {r['rss_anon_kib'] * gib:.2f} GiB anonymous); the trace stores "
            f"{r['trace_bytes'] / 2**20:.1f} MiB"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
