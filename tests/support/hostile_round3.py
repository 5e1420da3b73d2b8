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
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

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


def _into_other_repo(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    other = add_revision(root, OTHER, files)
    relink(snap / "config.json", os.path.relpath((other / "config.json").resolve(), snap))


def _index_into_other_repo(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    shard = os.path.relpath((add_revision(root, OTHER, files) / "model.safetensors").resolve(), snap)
    (snap / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": {k: shard for k in h.gpt2_state()}}
    (snap / "model.safetensors.index.json").write_text(json.dumps(index))


def _link_loop(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    relink(snap / "model.safetensors", "model.bin")
    relink(snap / "model.bin", "model.safetensors")


def _blobs_to_itself(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    (repo / "blobs").rename(repo / "old-blobs")
    relink(repo / "blobs", "blobs")


def _refs_folder(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    (repo / "refs" / "main").unlink()
    (repo / "refs" / "main").mkdir()


def _snapshots_file(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    (repo / "snapshots").rename(repo / "old-snapshots")
    (repo / "snapshots").write_text("not a folder")


def _repo_link_out(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    repo.rename(root.parent / "elsewhere")
    relink(repo, root.parent / "elsewhere")


def _refs_dotdot(root: Path, snap: Path, repo: Path, files: dict[str, bytes]) -> None:
    (repo / "refs" / "main").write_text("../../../outside")
    (root.parent / "outside").mkdir()


# case name -> what is done to a good cache (root, the snapshot, the repository folder, the repository's files)
CACHE_TRICKS: dict[str, Callable[[Path, Path, Path, dict[str, bytes]], object]] = {
    "cache-control": lambda root, snap, repo, files: None,
    "cache-link-into-other-repo": _into_other_repo,
    "cache-snapshot-is-other-repos": lambda root, snap, repo, files: relink(snap, add_revision(root, OTHER, files)),
    "cache-link-loop": _link_loop,
    "cache-link-to-itself": lambda root, snap, repo, files: relink(snap / "config.json", "config.json"),
    "cache-blobs-link-to-itself": _blobs_to_itself,
    "cache-weights-link-dev-zero": lambda root, snap, repo, files: relink(snap / "model.safetensors", "/dev/zero"),
    "cache-config-blob-fifo": lambda root, snap, repo, files: fifo((snap / "config.json").resolve()),
    "cache-weights-blob-fifo": lambda root, snap, repo, files: fifo((snap / "model.safetensors").resolve()),
    "cache-weights-blob-dev-zero": lambda root, snap, repo, files: relink(
        (snap / "model.safetensors").resolve(), "/dev/zero"
    ),
    "cache-refs-missing-commit": lambda root, snap, repo, files: (repo / "refs" / "main").write_text("f" * 40),
    "cache-refs-dotdot": _refs_dotdot,
    "cache-refs-huge": lambda root, snap, repo, files: h.sparse_file(
        repo / "refs" / "main", 2 << 30, head=snap.name.encode()
    ),
    "cache-refs-fifo": lambda root, snap, repo, files: fifo(repo / "refs" / "main"),
    "cache-refs-dev-zero": lambda root, snap, repo, files: relink(repo / "refs" / "main", "/dev/zero"),
    "cache-refs-empty": lambda root, snap, repo, files: (repo / "refs" / "main").write_text(""),
    "cache-refs-binary": lambda root, snap, repo, files: (repo / "refs" / "main").write_bytes(b"\xff\xfe\x00" * 20),
    "cache-refs-is-folder": _refs_folder,
    "cache-refs-link-loop": lambda root, snap, repo, files: relink(repo / "refs" / "main", "main"),
    "cache-snapshots-is-file": _snapshots_file,
    "cache-repo-folder-link-out": _repo_link_out,
    "cache-revision-dotdot": lambda root, snap, repo, files: (root / "x").write_text(snap.name),  # a ref outside refs/
    "cache-index-into-other-repo": _index_into_other_repo,
}


def cache_cases(d: Path) -> dict[str, LoadCase]:
    files = gpt2_files(d)
    out: dict[str, LoadCase] = {}
    for name, trick in CACHE_TRICKS.items():
        root, snap, out[name] = _cache(d, name, files)
        trick(root, snap, snap.parents[1], files)
    out["cache-control"] = out["cache-control"]._replace(expect="loaded")
    out["cache-revision-dotdot"] = out["cache-revision-dotdot"]._replace(spec=f"{REPO}@../../x")
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


# case name -> adapter_folder's settings (a config or a shape that disagrees with the base or with itself)
ADAPTER_SETTINGS: dict[str, dict[str, Any]] = {
    "adapter-control": {},
    "adapter-rank-mismatch": {"r": 4},
    "adapter-rank-pattern-mismatch": {"rank_pattern": {"c_attn": 3}},
    "adapter-huge-rank": {"r": 1 << 40},
    "adapter-shape-mismatch": {"a_shape": (2, D + 4)},
    "adapter-transposed": {"fan_in_fan_out": False},
    "adapter-target-missing": {"module": "transformer.h.7.attn.c_attn"},
    "adapter-target-not-a-weight": {"module": "transformer.h.0.ln_1"},
    "adapter-base-not-cached": {"base": "acme/not-downloaded"},
    "adapter-base-is-itself": {"base": "."},
    "adapter-base-cycle": {"base": "../other"},
    "adapter-base-link-loop": {"base": "loop"},
    "adapter-alpha-nan": {"lora_alpha": float("nan")},
    "adapter-alpha-infinite": {"lora_alpha": float("inf")},
    "adapter-rank-pattern-nan": {"rank_pattern": {"c_attn": float("nan")}},
    "adapter-dora": {"use_dora": True},
    "adapter-prefix-tuning": {"peft_type": "PREFIX_TUNING"},
}
PICKLE = b"\x80\x02cos\nsystem\n(S'echo pwned'\ntR."  # os.system('echo pwned'): it must never be unpickled
LYING_HEADER = {
    f"base_model.model.{TARGET}.lora_A.weight": {"dtype": "F32", "shape": [2, 1 << 40], "data_offsets": [0, 8 << 40]}
}


def _weights(folder: Path, a: torch.Tensor | None, b: torch.Tensor | None, **more: torch.Tensor) -> None:
    key = f"base_model.model.{TARGET}"
    given = {f"{key}.lora_A.weight": a, f"{key}.lora_B.weight": b} | more
    save_file({k: v for k, v in given.items() if v is not None}, str(folder / "adapter_model.safetensors"))


def _pickle_only(folder: Path) -> None:
    (folder / "adapter_model.safetensors").unlink()
    (folder / "adapter_model.bin").write_bytes(PICKLE)


# case name -> what is done to a good adapter folder's files
ADAPTER_FILES: dict[str, Callable[[Path], object]] = {
    "adapter-only-lora-a": lambda f: _weights(f, torch.zeros(2, D), None),
    "adapter-zero-delta": lambda f: _weights(f, torch.zeros(2, D), torch.zeros(3 * D, 2)),
    "adapter-nan-weights": lambda f: _weights(f, torch.full((2, D), float("nan")), torch.ones(3 * D, 2)),
    "adapter-saved-module-shape": lambda f: _weights(
        f, None, None, **{"base_model.model.transformer.wte.weight": torch.zeros(5, D)}
    ),
    "adapter-weights-fifo": lambda f: fifo(f / "adapter_model.safetensors"),
    "adapter-config-fifo": lambda f: fifo(f / "adapter_config.json"),
    "adapter-weights-dev-zero": lambda f: relink(f / "adapter_model.safetensors", "/dev/zero"),
    "adapter-pickle-only": _pickle_only,
    "adapter-lying-header": lambda f: h.raw_safetensors(f / "adapter_model.safetensors", json.dumps(LYING_HEADER)),
}


def adapter_cases(d: Path) -> dict[str, LoadCase]:
    base = h.gpt2_folder(d / "adapter-base")
    out: dict[str, LoadCase] = {}
    for name, settings in {**ADAPTER_SETTINGS, **dict.fromkeys(ADAPTER_FILES, {})}.items():
        kw = dict(settings)
        folder = adapter_folder(d / name / "adapter", str(kw.pop("base", base)), **kw)
        ADAPTER_FILES.get(name, lambda f: None)(folder)
        out[name] = LoadCase(str(folder), {}, d / name)
    out["adapter-control"] = out["adapter-control"]._replace(expect="loaded")
    empty_hub = {"HF_HUB_CACHE": str(d / "adapter-base-not-cached" / "empty-hub")}
    out["adapter-base-not-cached"] = out["adapter-base-not-cached"]._replace(env=empty_hub)
    adapter_folder(d / "adapter-base-cycle" / "other", "../adapter")  # the cycle's other half
    relink(d / "adapter-base-link-loop" / "adapter" / "loop", "loop")
    extra = {
        "adapter-missing-base": adapter_folder(d / "adapter-missing-base" / "adapter", str(d / "no-such-base")),
        "adapter-base-is-a-file": adapter_folder(
            d / "adapter-base-is-a-file" / "adapter", str(base / "model.safetensors")
        ),
        "adapter-base-is-adapter": adapter_folder(
            d / "adapter-base-is-adapter" / "second",
            str(adapter_folder(d / "adapter-base-is-adapter" / "first", str(base))),
        ),
    }
    out |= {name: LoadCase(str(folder), {}, d / name) for name, folder in extra.items()}
    return out


def build_round3_cases(d: Path) -> dict[str, LoadCase]:
    """Every load-side case of issue 38 (cache, adapters, GGUF) built under `d`."""
    from tests.support.hostile_round3_gguf import gguf_round3_cases

    return cache_cases(d) | adapter_cases(d) | gguf_round3_cases(d)


def surface(name: str) -> str:
    """The surface a case belongs to: the first word of its name."""
    return name.split("-", 1)[0]
