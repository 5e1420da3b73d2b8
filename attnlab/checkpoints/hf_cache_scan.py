"""The models on this computer: the model repositories of the Hugging Face cache (huggingface_hub's own
`scan_cache_dir`), each with its size, revisions and whether attnlab opens it, or the one-line reason it will
not, told from config.json and the file names alone (no weight is read). What `attnlab models` prints and
File → Open model… lists.

    models, problems = cached_models()        # [CachedModel], [one line per repository the scan could not read]
    folder_status(snapshot_folder)            # "" when it opens, else why not
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from attnlab import limits
from attnlab.bounded_read import FileRefused, confined, read_json
from attnlab.checkpoints.hf_cache import cache_dir, refs_problem

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


@dataclass(frozen=True)
class CachedModel:
    """One model repository of the cache."""

    repo_id: str
    size: int  # bytes on disk, all revisions (huggingface_hub's size_on_disk)
    size_text: str  # the same as huggingface_hub writes it ('1.2M'; bytes: '824 B')
    revisions: tuple[str, ...]  # each revision's refs (main, step1000, …) or its commit's first 8 digits
    folder: Path  # the snapshot that opening the id opens (refs/main, else the newest revision)
    status: str  # "" when attnlab opens it, else the one-line reason it will not

    @property
    def opens(self) -> bool:
        return not self.status

    @property
    def spec(self) -> str:
        """What opens it: the id, or id@commit when the cache has no main."""
        return self.repo_id if "main" in self.revisions else f"{self.repo_id}@{self.folder.name}"


def cached_models(cache: str | os.PathLike[str] | None = None) -> tuple[list[CachedModel], list[str]]:
    """The model repositories of `cache` (default: huggingface_hub's HF_HUB_CACHE), sorted by id, and one
    line for each entry huggingface_hub's scan found damaged. An absent cache is an empty list."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.utils import CacheNotFound

    root = Path(cache).expanduser() if cache is not None else cache_dir()
    try:
        odd = next(filter(None, (refs_problem(repo) for repo in root.iterdir() if repo.is_dir())), "")
    except OSError:  # no cache (yet), or not a folder: the scan says which
        odd = ""
    if odd:  # huggingface_hub's scan reads every refs/ file whole: one that is a FIFO would hang it
        return [], [f"the Hugging Face cache at {root} cannot be listed: {odd}"]
    try:
        info = scan_cache_dir(root)
    except CacheNotFound:
        return [], []
    except (OSError, ValueError) as e:  # a file where the folder should be, an unreadable folder
        return [], [f"the Hugging Face cache at {root} cannot be read ({limits.cut(str(e), 200)})"]
    models = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id.lower()):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        revisions = sorted(repo.revisions, key=lambda r: r.last_modified)
        chosen = next((r for r in revisions if "main" in r.refs), revisions[-1])
        names = tuple(sorted(n for r in revisions for n in r.refs)) + tuple(
            r.commit_hash[:8] for r in revisions if not r.refs
        )
        status = folder_status(chosen.snapshot_path)
        models.append(
            CachedModel(
                repo.repo_id, repo.size_on_disk, _size(repo.size_on_disk_str), names, chosen.snapshot_path, status
            )
        )
    problems = [limits.cut(" ".join(str(w).split()), 300) for w in info.warnings]
    return models, problems


def _size(text: str) -> str:
    """huggingface_hub's size text, with its unit when it has none (bytes: '824.0' -> '824 B')."""
    return f"{float(text):.0f} B" if text[-1:].isdigit() else text


def folder_status(folder: Path) -> str:
    """'' when attnlab opens the model folder, else the one-line reason it will not: no config.json, a config
    attnlab cannot run (model type, remote code, quantized, an option it refuses), or no weights it reads.
    Reads config.json only (bounded, held to the folder's link rule) and the folder's file names."""
    from attnlab.checkpoints import hf
    from attnlab.checkpoints.hf.common import refusal
    from attnlab.checkpoints.quantized_methods import refusal as quantization_refusal

    if not os.path.lexists(folder / "config.json"):
        return "no config.json: not a transformers model folder"
    try:
        config = read_json(confined(folder, "config.json", "config.json"), "config.json", limits.MAX_CONFIG_CHARS)
    except FileRefused as e:
        return str(e)
    if not isinstance(config, dict):
        return "config.json does not hold a JSON object"
    model_type = config.get("model_type")
    refused = quantization_refusal(config)  # bitsandbytes, GPTQ and AWQ are dequantized on load
    if refused:
        return refused
    if model_type not in hf.SUPPORTED_MODEL_TYPES and config.get("auto_map"):
        return (
            f"model type {limits.excerpt(model_type)} runs its own code (auto_map in config.json); attnlab runs "
            "no code from a model folder"
        )
    try:
        hf.config_from_hf(config)
    except Exception as e:  # the converters raise ValueError / ConfigError / CheckpointError with the reason
        return refusal(e)
    return weights_status(folder)


def weights_status(folder: Path) -> str:
    """'' when the folder has weights attnlab reads (by name), else what it has instead."""
    if any(os.path.lexists(folder / name) for name in WEIGHT_FILES):
        return ""
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError as e:
        return f"the folder cannot be listed ({e.strerror or e})"
    gguf = sorted(n for n in names if n.endswith(".gguf"))
    if gguf:  # the repository as a whole is no Hugging Face folder; each file opens by itself (gguf_file.py)
        return f"GGUF weights only; open one file by its path (attnlab {folder / gguf[0]})"
    if any(n.endswith((".h5", ".msgpack", ".onnx")) for n in names):
        return "TensorFlow, Flax or ONNX weights only; attnlab reads safetensors (or PyTorch .bin) weights"
    return "no weights (model.safetensors or pytorch_model.bin) in this revision"


def table(models: list[CachedModel]) -> list[str]:
    """The lines `attnlab models` prints: id, size, revisions, and 'opens' or why not."""
    rows = [("MODEL", "SIZE", "REVISIONS", "OPENS IN ATTNLAB")]
    for m in models:
        revisions = ", ".join(m.revisions[:4]) + (f" (+{len(m.revisions) - 4})" if len(m.revisions) > 4 else "")
        rows.append((m.repo_id, m.size_text, revisions, "opens" if m.opens else f"no: {m.status}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip() for r in rows]
