"""Builders of tiny Hugging Face caches in tmp folders, laid out exactly as huggingface_hub lays its cache out
(huggingface_hub/file_download.py: `_create_symlink`, `repo_folder_name`; the layout `scan_cache_dir` reads):

    <cache>/models--org--name/blobs/<sha256 for LFS files (weights), git sha1 for the others>
    <cache>/models--org--name/snapshots/<40-hex commit>/<file> -> ../../blobs/<hash>   (relative links)
    <cache>/models--org--name/refs/<branch>                                         (the commit, no newline)

`copies=True` puts real files in snapshots/ instead of links (Windows without the right to link)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

LFS_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


def blob_name(file: str, data: bytes) -> str:
    """The etag huggingface_hub names a blob by: an LFS file's sha256, a regular git file's blob sha1."""
    if file.endswith(LFS_SUFFIXES):
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def add_revision(
    cache: Path,
    repo_id: str,
    files: dict[str, bytes],
    refs: tuple[str, ...] = ("main",),
    copies: bool = False,
) -> Path:
    """Put `files` ({name in the repo: content}) into `cache` as one revision of `repo_id`, named by `refs`;
    the snapshot folder."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    commit = hashlib.sha1(json.dumps(sorted((n, hashlib.sha256(d).hexdigest()) for n, d in files.items())).encode())
    commit.update(repo_id.encode())
    snapshot = repo / "snapshots" / commit.hexdigest()
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / blob_name(name, data)
        blob.write_bytes(data)
        target = snapshot / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if copies:
            shutil.copyfile(blob, target)
        else:
            target.symlink_to(os.path.relpath(blob, target.parent))
    for ref in refs:
        (repo / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit.hexdigest())
    return snapshot


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of a saved model folder (save_pretrained's), by its name in the repository."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def tiny_gpt2(seed: int = 0):
    """A tiny random GPT2LMHeadModel (tests/support/hf_tiny.py), its weights drawn from `seed`."""
    import torch

    from tests.support import hf_tiny

    model, _ = hf_tiny.gpt2()
    if seed:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return model.eval()


def saved_gpt2(tmp: Path, seed: int = 0) -> dict[str, bytes]:
    """The files save_pretrained writes for tiny_gpt2(seed) (config.json, model.safetensors, …)."""
    out = tmp / f"saved-{seed}"
    tiny_gpt2(seed).save_pretrained(str(out), safe_serialization=True)
    return folder_files(out)
