"""Builders of hostile inputs for the tests/test_hostile_*.py modules (each a few kB, made at test time), and
a runner that loads one in a child process under an address-space limit and reports its time and memory."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import torch
from safetensors.torch import save_file

from attnlab.checkpoints import random_model, save_checkpoint
from attnlab.engine.config import ModelConfig
from attnlab.engine.tokenizer import WordTokenizer

ROOT = Path(__file__).resolve().parents[2]
TOK = WordTokenizer.train(["the black cat sat on the mat", "le chat noir est assis"])
TINY = ModelConfig(d_model=16, n_heads=4, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=16)
ADDRESS_SPACE = 3 << 30  # 3 GB of address space: torch itself reserves ~0.8 GB; any real model here fits
PEAK_RSS_MB = 900  # what a refused file may cost at most, all of torch included (~250 MB)
SECONDS = 20  # loose: a hang or a minute-long allocation, not a benchmark


def tiny_model(**changes):
    import dataclasses

    return random_model(dataclasses.replace(TINY, **changes), seed=1, tokenizer=TOK)


def tiny_checkpoint(path: Path, **changes) -> Path:
    return save_checkpoint(tiny_model(**changes), path)


def safetensors_with(path: Path, tensors: dict, metadata: dict) -> Path:
    save_file(tensors, str(path), metadata=metadata)
    return path


def metadata_of(model) -> dict:
    from attnlab.checkpoints.native import checkpoint_metadata

    return checkpoint_metadata(model)


def tensors_of(model) -> dict:
    return {k: v.detach().clone().contiguous() for k, v in model.module.checkpoint_tensors().items()}


def raw_safetensors(path: Path, header_text: str, data: bytes = b"") -> Path:
    """A safetensors file with exactly this header text (no library in the way)."""
    raw = header_text.encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)
    return path


# ---- .pt files -------------------------------------------------------------------------------------------
def torch_zip_with_pickle(path: Path, pickle_bytes: bytes, compress: bool = False) -> Path:
    """A torch.save-style zip archive whose data.pkl is `pickle_bytes`."""
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return path


def deep_list_pickle(depth: int) -> bytes:
    """[[[[…]]]] `depth` levels deep, protocol 2: EMPTY_LIST x depth, then APPEND x (depth-1)."""
    return b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."


def deep_dict_pickle(depth: int) -> bytes:
    """{'k': {'k': {…}}} `depth` levels deep: keys nested in dicts."""
    return b"\x80\x02" + b"}X\x01\x00\x00\x00k" * depth + b"}" + b"s" * depth + b"."


def zip_bomb(path: Path, unpacked: int = 20_000_000) -> Path:
    """A .pt archive whose pickle entry inflates from ~20 kB to `unpacked` bytes."""
    return torch_zip_with_pickle(path, b"\x80\x02}." + b"\0" * unpacked, compress=True)


def zero_stride_pt(path: Path) -> Path:
    """One float posing as 2^30 of them (stride 0), next to a valid config."""
    torch.save({"config": json.loads(TINY.to_json()), "src_embed.weight": torch.zeros(1).expand(1 << 30)}, path)
    return path


# ---- a child process with limits ------------------------------------------------------------------------
def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_limited(code: str, timeout: float = 120) -> dict:
    """Run `code` in a fresh Python under the address-space limit. The code sets `result` (a JSON-able value);
    returns {"result", "seconds", "peak_mb", "returncode", "stderr"}: seconds and peak memory of the child's
    own work (its imports excluded from the time)."""
    script = (
        textwrap.dedent("""
        import json, resource, sys, time
        import torch, attnlab.checkpoints  # imports are not what is measured

        def peak_mb():  # this process's own high-water mark: /proc's VmHWM starts afresh at exec, while
            # ru_maxrss keeps the forking test worker's size (~1 GB late in a suite run)
            try:
                with open("/proc/self/status") as f:
                    return next(int(ln.split()[1]) / 1024 for ln in f if ln.startswith("VmHWM:"))
            except (OSError, StopIteration):
                return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        result = None
    """)
        + textwrap.dedent(code)
        + textwrap.dedent("""
        seconds = time.perf_counter() - start
        print("RESULT " + json.dumps({"result": result, "seconds": seconds, "peak_mb": peak_mb()}))
    """)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTNLAB_TORCH_THREADS": "1", "OMP_NUM_THREADS": "1"}
    begun = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
        env=env,
        cwd=ROOT,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    out = json.loads(line[7:]) if line else {"result": None, "seconds": None, "peak_mb": None}
    out.update(returncode=proc.returncode, stderr=proc.stderr[-3000:], wall=time.perf_counter() - begun)
    return out


def load_in_child(paths: dict[str, Path]) -> dict[str, dict]:
    """load_checkpoint on each path in ONE limited child (a fresh interpreter per file would spend most of
    the time importing torch). Per case: {"result": ["ok", ""] or [exception type, message], "seconds",
    "peak_mb"}; peak_mb is the child's high-water mark after that case, so it bounds every case before it."""
    cases = {name: str(p) for name, p in paths.items()}
    outcome = run_limited(f"""
        from attnlab.checkpoints import load_checkpoint
        result = {{}}
        for name, path in {cases!r}.items():
            begun = time.perf_counter()
            try:
                load_checkpoint(path)
                got = ["ok", ""]
            except BaseException as e:
                got = [type(e).__name__, str(e)]
            result[name] = {{"result": got, "seconds": time.perf_counter() - begun,
                            "peak_mb": peak_mb()}}
    """)
    assert outcome["returncode"] == 0 and outcome["result"], outcome["stderr"]
    return outcome["result"]


def assert_refused_in_bounds(outcome: dict, *phrases: str) -> str:
    """The child ended normally, raised CheckpointError with every phrase, quickly and in little memory."""
    kind, message = outcome["result"]
    assert kind == "CheckpointError", (kind, message[:500])
    for phrase in phrases:
        assert phrase in message, message[:1000]
    assert len(message) < 2000
    assert outcome["seconds"] < SECONDS and outcome["peak_mb"] < PEAK_RSS_MB, outcome
    return message


# ---- the file side of issue 27: folders, pickles that overflow the C stack, sparse files ----------------
GPT2_CONFIG = {"model_type": "gpt2", "n_embd": 16, "n_head": 2, "n_layer": 1, "vocab_size": 11, "n_positions": 16}


def gpt2_state(d: int = 16, vocab: int = 11, positions: int = 16) -> dict:
    """A one-layer GPT-2 state dict under Hugging Face's names (Conv1D weights are [in, out])."""
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.1

    block = {
        "ln_1.weight": torch.ones(d),
        "ln_1.bias": r(d),
        "attn.c_attn.weight": r(d, 3 * d),
        "attn.c_attn.bias": r(3 * d),
        "attn.c_proj.weight": r(d, d),
        "attn.c_proj.bias": r(d),
        "ln_2.weight": torch.ones(d),
        "ln_2.bias": r(d),
        "mlp.c_fc.weight": r(d, 4 * d),
        "mlp.c_fc.bias": r(4 * d),
        "mlp.c_proj.weight": r(4 * d, d),
        "mlp.c_proj.bias": r(d),
    }
    state = {f"transformer.h.0.{k}": v for k, v in block.items()}
    state |= {"transformer.wte.weight": r(vocab, d), "transformer.wpe.weight": r(positions, d)}
    return state | {"transformer.ln_f.weight": torch.ones(d), "transformer.ln_f.bias": r(d)}


def gpt2_folder(folder: Path, state: dict | None = None, **config) -> Path:
    """A Hugging Face folder: config.json + model.safetensors (or nothing, when `state` is {})."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(GPT2_CONFIG | config))
    state = gpt2_state() if state is None else state
    if state:
        save_file(state, str(folder / "model.safetensors"))
    return folder


def deep_tuple_key_pickle(depth: int) -> bytes:
    """{((((…),),),): 1}: hashing the key recurses in C once per level, with no guard (SIGSEGV when deep)."""
    return b"\x80\x02}" + b")" + b"\x85" * depth + b"K\x01s."


def stale_memo_pickle(depth: int) -> bytes:
    """(((L,),),) `depth` tuples around a stored list L, which is filled LATER (through the memo) with a list
    nested `depth` deep: the value is ~2·depth deep though no single step builds more than `depth`."""
    return (
        b"\x80\x02]q\x00"  # L = [] (memo 0)
        + b"\x85" * depth  # wrapped in `depth` tuples
        + b"h\x00"  # L again
        + b"]" * depth
        + b"a" * (depth - 1)  # a list `depth` deep
        + b"a0."  # L.append(it); POP L; STOP
    )


def decoy_archive(path: Path, pickle_bytes: bytes) -> Path:
    """A torch.save-style archive whose first .pkl is a harmless decoy (archive/xdata.pkl) and whose
    archive/data.pkl, the one torch.load reads, is `pickle_bytes`."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/xdata.pkl", b"\x80\x02}.")
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return path


def sparse_file(path: Path, size: int = 3 << 30, head: bytes = b"{") -> Path:
    """A file of `size` bytes that takes no disk space (a hole after `head`)."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def cli_in_child(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`attnlab ARGS` in a fresh, memory-limited Python (a crash is a signal in returncode, not a test crash)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ATTNLAB_TORCH_THREADS": "1", "OMP_NUM_THREADS": "1"}
    code = "import sys; from attnlab.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
        env=env,
        cwd=ROOT,
    )
