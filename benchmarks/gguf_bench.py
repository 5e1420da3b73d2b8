"""Opening a 1B-parameter Q4_0 GGUF file on this CPU (issue 36): peak resident memory against the float32 weights
+ 1 GiB, and the time to open it.

    python benchmarks/gguf_bench.py                     # TinyLlama's sizes: 1.1 B parameters, Q4_0
    python benchmarks/gguf_bench.py --layers 4 --type Q4_K  # smaller / another type

The file is written once to /tmp (random valid blocks, streamed through the gguf package's writer: ~0.6 GB for
Q4_0), then opened by load_checkpoint in a fresh child process, which reports its own high-water mark (VmHWM)
and the seconds load_checkpoint took; the parent prints them beside the float32 size of the weights.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHILD = """
import json, sys, time
import torch, attnlab.checkpoints
from attnlab.checkpoints import load_checkpoint
start = time.perf_counter()
model = load_checkpoint(sys.argv[1])
seconds = time.perf_counter() - start
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
n = sum(t.numel() for t in model.module.checkpoint_tensors().values())
print(json.dumps({"seconds": seconds, "peak": peak, "parameters": n, "said": model.metadata["quantization"]}))
"""


def shapes(d: int, ffn: int, layers: int, heads: int, kv_heads: int, vocab: int) -> dict[str, tuple[int, ...]]:
    """GGUF tensor name -> PyTorch-order shape of a Llama with these sizes (untied output)."""
    kv = d // heads * kv_heads
    out: dict[str, tuple[int, ...]] = {"token_embd.weight": (vocab, d)}
    for i in range(layers):
        b = f"blk.{i}."
        out |= {b + "attn_norm.weight": (d,), b + "attn_q.weight": (d, d), b + "attn_k.weight": (kv, d)}
        out |= {b + "attn_v.weight": (kv, d), b + "attn_output.weight": (d, d), b + "ffn_norm.weight": (d,)}
        out |= {b + "ffn_gate.weight": (ffn, d), b + "ffn_up.weight": (ffn, d), b + "ffn_down.weight": (d, ffn)}
    return out | {"output_norm.weight": (d,), "output.weight": (vocab, d)}


# where each type's fp16 scales (d, and dmin where it has one) sit in its block (gguf.quants' dequantize_blocks)
SCALES_AT = {"Q4_0": (0,), "Q5_0": (0,), "Q8_0": (0,), "Q4_1": (0, 2), "Q5_1": (0, 2), "Q4_K": (0, 2), "Q5_K": (0, 2)}
SCALES_AT |= {"Q2_K": (80, 82), "Q3_K": (108,), "Q6_K": (208,)}


def blocks(shape: tuple[int, ...], qtype, rng: np.random.Generator) -> np.ndarray:
    """Random bytes as the tensor's blocks, each block's fp16 scales set to 0.002 (random bytes there could be
    NaN or infinite)."""
    from gguf import GGML_QUANT_SIZES

    block, size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(int(np.prod(shape)) // block, size), dtype=np.uint8)
    for at in SCALES_AT[qtype.name]:
        raw[:, at : at + 2] = np.frombuffer(np.float16(0.002).tobytes(), dtype=np.uint8)
    return raw.reshape(*shape[:-1], shape[-1] // block * size)


def write_file(path: Path, args: argparse.Namespace) -> int:
    """The GGUF file of a random Llama with these sizes; returns its parameter count."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFWriter

    qtype = GGMLQuantizationType[args.type]
    tensors = shapes(args.d, args.ffn, args.layers, args.heads, args.kv_heads, args.vocab)
    w = GGUFWriter(str(path), "llama")
    w.add_name("random 1B llama")
    for add, value in (
        (w.add_context_length, 2048),
        (w.add_embedding_length, args.d),
        (w.add_block_count, args.layers),
        (w.add_feed_forward_length, args.ffn),
        (w.add_head_count, args.heads),
        (w.add_head_count_kv, args.kv_heads),
        (w.add_rope_dimension_count, args.d // args.heads),
    ):
        add(value)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    tokens += [f"\u2581w{i}" for i in range(args.vocab - len(tokens))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(len(tokens))])
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    block, size = GGML_QUANT_SIZES[qtype]
    for name, shape in tensors.items():
        if len(shape) == 1:
            w.add_tensor_info(name, shape, np.dtype(np.float32), shape[0] * 4)
        else:
            byte_shape = (*shape[:-1], shape[-1] // block * size)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), int(np.prod(byte_shape)), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(0)
    for shape in tensors.values():
        w.write_tensor_data(np.ones(shape, np.float32) if len(shape) == 1 else blocks(shape, qtype, rng))
    w.close()
    return sum(int(np.prod(s)) for s in tensors.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--type", default="Q4_0", choices=sorted(SCALES_AT), help="ggml type of the 2-D weights")
    parser.add_argument("--layers", type=int, default=22)
    parser.add_argument("--d", type=int, default=2048)
    parser.add_argument("--ffn", type=int, default=5632)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--file", default="", help="where to write the file (default: /tmp/attnlab-bench-<sizes>.gguf)")
    args = parser.parse_args()
    path = Path(args.file or f"/tmp/attnlab-bench-{args.type}-{args.layers}x{args.d}.gguf")
    begun = time.perf_counter()
    n = write_file(path, args)
    print(
        f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB, {n:,} parameters) in {time.perf_counter() - begun:.0f} s"
    )
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"the child failed: {proc.stderr[-2000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    fp32 = got["parameters"] * 4
    target = fp32 + 2**30
    print(f"opened in {got['seconds']:.1f} s: {got['said']}")
    print(
        f"peak RSS {got['peak'] / 2**30:.2f} GiB; float32 weights {fp32 / 2**30:.2f} GiB + 1 GiB = "
        f"{target / 2**30:.2f} GiB: {'below' if got['peak'] < target else 'ABOVE'} "
        f"(peak − float32 weights = {(got['peak'] - fp32) / 2**30:.2f} GiB)"
    )
    path.unlink()


if __name__ == "__main__":
    main()
