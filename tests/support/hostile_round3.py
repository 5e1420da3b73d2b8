"""Issue 38's load-side hostile inputs (round three): Hugging Face cache folders whose links lead into other
repositories, loop or reach devices and FIFOs, refs/ files that are huge, FIFOs or name odd commits; LoRA adapter
folders with mismatched ranks, shapes and targets and a base that is missing, an adapter, or the adapter itself;
GGUF files written by the gguf package's GGUFWriter and then made to lie (tests/support/hostile_round3_gguf.py).
Each case lives in its own folder d/<name>/, so what a refusal leaves behind can be seen there.

    build_round3_cases(d) -> {name: LoadCase(spec, env, folder, expect)}

`spec` is what load_checkpoint / `attnlab info` is given (a path, or a model id read from the cache that
env["HF_HUB_CACHE"] names); `expect` is "refused", or "loaded" for the controls. Used by
benchmarks/hostile_surfaces_bench.py and tests/robustness/test_hostile_round3_load.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import torch
from safetensors.torch import save_file

from tests.support import hostile_files as h
from tests.support.hf_cache_files import add_revision

REPO, OTHER = "acme/tiny", "acme/other"
D = 16  # the tiny GPT-2's width (hostile_files.GPT2_CONFIG)
TARGET = "transformer.h.0.attn.c_attn"  # a Conv1D [in 16, out 48]: peft saves it with fan_in_fan_out


class LoadCase(NamedTuple):
    spec: str
    env: dict[str, str]
    folder: Path
    expect: str = "refused"


def gpt2_files(d: Path) -> dict[str, bytes]:
    folder = h.gpt2_folder(d / "plain-gpt2")
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def relink(path: Path, target: str | Path) -> Path:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)
    return path


# ---- the Hugging Face cache ------------------------------------------------------------------------------------
def _cache(d: Path, name: str, files: dict[str, bytes]) -> tuple[Path, Path, LoadCase]:
    """(cache root, snapshot of acme/tiny, the case opening it by id) in d/<name>/hub."""
    root = d / name / "hub"
    snapshot = add_revision(root, REPO, files)
    return root, snapshot, LoadCase(REPO, {"HF_HUB_CACHE": str(root)}, d / name)


def cache_cases(d: Path) -> dict[str, LoadCase]:
    files = gpt2_files(d)
    out: dict[str, LoadCase] = {}

    def case(name: str) -> tuple[Path, Path, Path]:
        root, snapshot, out[name] = _cache(d, name, files)
        return root, snapshot, snapshot.parents[1]

    case("cache-control")
    out["cache-control"] = out["cache-control"]._replace(expect="loaded")
    root, snap, repo = case("cache-link-into-other-repo")
    other = add_revision(root, OTHER, files)
    relink(snap / "config.json", os.path.relpath((other / "config.json").resolve(), snap))
    root, snap, repo = case("cache-snapshot-is-other-repos")
    other = add_revision(root, OTHER, files)
    relink(snap, other)  # snapshots/<commit> -> another repository's snapshot folder
    _r, snap, _repo = case("cache-link-loop")
    relink(snap / "model.safetensors", "model.bin")
    relink(snap / "model.bin", "model.safetensors")
    _r, snap, _repo = case("cache-link-to-itself")
    relink(snap / "config.json", "config.json")
    _r, snap, repo = case("cache-blobs-link-to-itself")
    blobs = repo / "blobs"
    blobs.rename(repo / "old-blobs")
    relink(blobs, "blobs")
    _r, snap, _repo = case("cache-weights-link-dev-zero")
    relink(snap / "model.safetensors", "/dev/zero")
    _r, snap, _repo = case("cache-config-blob-fifo")
    fifo((snap / "config.json").resolve())
    _r, snap, _repo = case("cache-weights-blob-fifo")
    fifo((snap / "model.safetensors").resolve())
    _r, snap, _repo = case("cache-weights-blob-dev-zero")
    relink((snap / "model.safetensors").resolve(), "/dev/zero")
    _r, snap, repo = case("cache-refs-missing-commit")
    (repo / "refs" / "main").write_text("f" * 40)
    _r, snap, repo = case("cache-refs-dotdot")
    (repo / "refs" / "main").write_text("../../../outside")
    (d / "cache-refs-dotdot" / "outside").mkdir()
    _r, snap, repo = case("cache-refs-huge")
    h.sparse_file(repo / "refs" / "main", 2 << 30, head=snap.name.encode())
    _r, snap, repo = case("cache-refs-fifo")
    fifo(repo / "refs" / "main")
    _r, snap, repo = case("cache-refs-dev-zero")
    relink(repo / "refs" / "main", "/dev/zero")
    _r, snap, repo = case("cache-refs-empty")
    (repo / "refs" / "main").write_text("")
    _r, snap, repo = case("cache-refs-binary")
    (repo / "refs" / "main").write_bytes(b"\xff\xfe\x00" * 20)
    _r, snap, repo = case("cache-refs-is-folder")
    (repo / "refs" / "main").unlink()
    (repo / "refs" / "main").mkdir()
    _r, snap, repo = case("cache-refs-link-loop")
    relink(repo / "refs" / "main", "main")
    _r, snap, repo = case("cache-snapshots-is-file")
    (repo / "snapshots").rename(repo / "old-snapshots")
    (repo / "snapshots").write_text("not a folder")
    root, snap, repo = case("cache-repo-folder-link-out")
    repo.rename(d / "cache-repo-folder-link-out" / "elsewhere")
    relink(repo, d / "cache-repo-folder-link-out" / "elsewhere")
    root, snap, repo = case("cache-revision-dotdot")
    (d / "cache-revision-dotdot" / "hub" / "x").write_text(snap.name)  # a 'ref' outside refs/
    out["cache-revision-dotdot"] = out["cache-revision-dotdot"]._replace(spec=f"{REPO}@../../x")
    _r, snap, _repo = case("cache-index-into-other-repo")
    other = add_revision(root, OTHER, files)
    weights = h.gpt2_state()
    shard = os.path.relpath((other / "model.safetensors").resolve(), snap)
    index = {"metadata": {}, "weight_map": {k: shard for k in weights}}
    (snap / "model.safetensors").unlink()
    (snap / "model.safetensors.index.json").write_text(json.dumps(index))
    return out


# ---- LoRA adapters ---------------------------------------------------------------------------------------------
def adapter_folder(
    folder: Path,
    base: str,
    r: int = 2,
    a_shape: tuple[int, ...] | None = None,
    b_shape: tuple[int, ...] | None = None,
    module: str = TARGET,
    **settings: object,
) -> Path:
    """A peft-style LoRA adapter (adapter_config.json + adapter_model.safetensors) on the tiny GPT-2's c_attn."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"peft_type": "LORA", "r": r, "lora_alpha": 4, "fan_in_fan_out": True, "base_model_name_or_path": base}
    config |= {"target_modules": [module.rsplit(".", 1)[-1]]} | settings
    (folder / "adapter_config.json").write_text(json.dumps(config))
    g = torch.Generator().manual_seed(0)
    key = f"base_model.model.{module}"
    tensors = {
        f"{key}.lora_A.weight": torch.randn(a_shape or (2, D), generator=g),  # [r, in]
        f"{key}.lora_B.weight": torch.randn(b_shape or (3 * D, 2), generator=g),  # [out, r]
    }
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    return folder


def adapter_cases(d: Path) -> dict[str, LoadCase]:
    base = h.gpt2_folder(d / "adapter-base")
    out: dict[str, LoadCase] = {}

    def case(name: str, base_name: str = str(base), **kw: object) -> Path:
        folder = adapter_folder(d / name / "adapter", base_name, **kw)  # type: ignore[arg-type]
        out[name] = LoadCase(str(folder), {}, d / name)
        return folder

    case("adapter-control")
    out["adapter-control"] = out["adapter-control"]._replace(expect="loaded")
    case("adapter-rank-mismatch", r=4)
    case("adapter-rank-pattern-mismatch", rank_pattern={"c_attn": 3})
    case("adapter-huge-rank", r=1 << 40)
    case("adapter-shape-mismatch", a_shape=(2, D + 4))
    case("adapter-transposed", fan_in_fan_out=False)
    case("adapter-target-missing", module="transformer.h.7.attn.c_attn")
    case("adapter-target-not-a-weight", module="transformer.h.0.ln_1")
    case("adapter-missing-base", base_name=str(d / "no-such-base"))
    case("adapter-base-not-cached", base_name="acme/not-downloaded")
    out["adapter-base-not-cached"] = out["adapter-base-not-cached"]._replace(
        env={"HF_HUB_CACHE": str(d / "adapter-base-not-cached" / "empty-hub")}
    )
    first = case("adapter-base-is-adapter")
    second = adapter_folder(d / "adapter-base-is-adapter" / "second", str(first))
    out["adapter-base-is-adapter"] = out["adapter-base-is-adapter"]._replace(spec=str(second))
    case("adapter-base-is-itself", base_name=".")
    a = case("adapter-base-cycle", base_name="../other")
    adapter_folder(a.parent / "other", "../adapter")
    case("adapter-base-is-a-file", base_name=str(base / "model.safetensors"))
    case("adapter-base-link-loop", base_name="loop")
    relink(d / "adapter-base-link-loop" / "adapter" / "loop", "loop")
    case("adapter-alpha-nan", lora_alpha=float("nan"))
    case("adapter-alpha-infinite", lora_alpha=float("inf"))
    case("adapter-rank-pattern-nan", rank_pattern={"c_attn": float("nan")})
    case("adapter-dora", use_dora=True)
    case("adapter-prefix-tuning", peft_type="PREFIX_TUNING")
    folder = case("adapter-only-lora-a")
    save_file(
        {f"base_model.model.{TARGET}.lora_A.weight": torch.zeros(2, D)}, str(folder / "adapter_model.safetensors")
    )
    folder = case("adapter-zero-delta")
    zeros = {f"base_model.model.{TARGET}.lora_A.weight": torch.zeros(2, D)}
    save_file(
        zeros | {f"base_model.model.{TARGET}.lora_B.weight": torch.zeros(3 * D, 2)},
        str(folder / "adapter_model.safetensors"),
    )
    folder = case("adapter-nan-weights")
    nans = {f"base_model.model.{TARGET}.lora_A.weight": torch.full((2, D), float("nan"))}
    save_file(
        nans | {f"base_model.model.{TARGET}.lora_B.weight": torch.ones(3 * D, 2)},
        str(folder / "adapter_model.safetensors"),
    )
    folder = case("adapter-saved-module-shape")
    save_file({"base_model.model.transformer.wte.weight": torch.zeros(5, D)}, str(folder / "adapter_model.safetensors"))
    folder = case("adapter-weights-fifo")
    fifo(folder / "adapter_model.safetensors")
    folder = case("adapter-config-fifo")
    fifo(folder / "adapter_config.json")
    folder = case("adapter-weights-dev-zero")
    relink(folder / "adapter_model.safetensors", "/dev/zero")
    folder = case("adapter-pickle-only")
    (folder / "adapter_model.safetensors").unlink()
    (folder / "adapter_model.bin").write_bytes(b"\x80\x02cos\nsystem\n(S'echo pwned'\ntR.")
    folder = case("adapter-lying-header")
    h.raw_safetensors(
        folder / "adapter_model.safetensors",
        json.dumps(
            {
                f"base_model.model.{TARGET}.lora_A.weight": {
                    "dtype": "F32",
                    "shape": [2, 1 << 40],
                    "data_offsets": [0, 8 << 40],
                }
            }
        ),
    )
    return out


def build_round3_cases(d: Path) -> dict[str, LoadCase]:
    """Every load-side case of issue 38 (cache, adapters, GGUF) built under `d`."""
    from tests.support.hostile_round3_gguf import gguf_round3_cases

    return cache_cases(d) | adapter_cases(d) | gguf_round3_cases(d)


def surface(name: str) -> str:
    """The surface a case belongs to: the first word of its name."""
    return name.split("-", 1)[0]
