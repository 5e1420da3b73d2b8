"""Models in the Hugging Face cache, named by id, read offline through huggingface_hub's own functions.

    resolve_model("acme/tiny-gpt2")           # Path of snapshots/<commit>/ (refs/main); a path stays a path
    resolve_cached("acme/tiny-gpt2")          # the same for an id only, never the network
    resolve_cached("acme/tiny-gpt2@step1000") # a branch or tag recorded in refs/, or a commit hash
    model_spec("acme/tiny-gpt2")              # ("acme/tiny-gpt2", None) for an id, None for a path
    cached_repo_of(folder)                    # (repo id, commit) when `folder` is a cached snapshot
    cache_dir()                               # huggingface_hub.constants.HF_HUB_CACHE (HF_HUB_CACHE, HF_HOME)

The cache, as huggingface_hub lays it out (file_download.py, utils/_cache_manager.py):
`<cache>/models--org--name/{blobs/<sha256 or git sha1>, refs/<branch> (a commit hash), snapshots/<commit>/
<file> -> ../../blobs/<hash>}` (real files instead of links where the system cannot link, as on Windows
without the right). What a snapshot's links may lead to is bounded_read.confined's rule. huggingface_hub is
imported only when an id is looked up. Plain Python (no torch, no Qt).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnlab.bounded_read import cache_blobs
from attnlab.checkpoints.errors import CheckpointError
from attnlab.model_ids import looks_like_id

HF_CACHE_KEY = "hf_cache"  # LiveModel.metadata of a model read from a cached snapshot: repo, commit, folder


class NotCached(CheckpointError):
    """An id (or one of its revisions) that is not in the cache; the message is one line naming the cache."""


def cache_dir() -> Path:
    """The cache huggingface_hub reads and downloads into: HF_HUB_CACHE, else HF_HOME/hub, as the environment says
    now (huggingface_hub reads them once, at import, into `constants.HF_HUB_CACHE`: its default otherwise)."""
    from huggingface_hub import constants

    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path(constants.HF_HUB_CACHE).expanduser()


def model_spec(spec: str | os.PathLike[str]) -> tuple[str, str | None] | None:
    """(repo id, revision or None) when `spec` names a model by id: 'org/name' or 'org/name@revision' that is
    not an existing path (a path that exists is always a path); None for a path."""
    if not looks_like_id(spec):
        return None
    repo_id, _, revision = str(spec).partition("@")
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return None
    return repo_id, revision or None


def resolve_model(spec: str | os.PathLike[str]) -> Path:
    """What `spec` opens: a path (expanded) when it is one, the cached snapshot folder when it is a model id
    ('org/name[@revision]' that is no existing path; NotCached when the cache does not hold it)."""
    if model_spec(spec) is not None:
        return resolve_cached(str(spec))
    return Path(spec).expanduser()


def resolve_cached(spec: str, cache: str | os.PathLike[str] | None = None) -> Path:
    """The snapshot folder of 'org/name[@revision]' in the cache (default `cache_dir()`), resolved as
    huggingface_hub resolves it offline (`snapshot_download(..., local_files_only=True)`: refs/<branch or
    tag>, or a commit hash); never the network. NotCached (one line) when the id or revision is not there."""
    parsed = model_spec(spec) if "/" in spec else None
    if parsed is None:
        raise NotCached(f"{spec!r} is not a model id (org/name or org/name@revision)")
    repo_id, revision = parsed
    if revision is not None and (".." in revision.replace("\\", "/").split("/") or revision.startswith("/")):
        raise NotCached(f"{revision!r} is not a revision of {repo_id} (a branch, tag or commit); a path is not read")
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import HFValidationError, LocalEntryNotFoundError

    root = Path(cache).expanduser() if cache is not None else cache_dir()
    odd = refs_problem(root / repo_folder(repo_id))
    if odd:
        raise NotCached(f"{repo_id} cannot be opened from the Hugging Face cache at {root}: {odd}")
    try:
        # Only config.json is asked of the snapshot: huggingface_hub checks the snapshot against the repository's
        # cached file listing, and a download of some files (`attnlab get`, `hf download --include`) leaves out
        # what attnlab never reads (pickles, code, READMEs). The loader says what it lacks of the rest.
        folder = Path(
            snapshot_download(
                repo_id, revision=revision, cache_dir=root, local_files_only=True, allow_patterns=["config.json"]
            )
        )
    except (LocalEntryNotFoundError, HFValidationError, OSError, ValueError) as e:
        raise NotCached(not_cached_message(repo_id, revision, root, e)) from None
    return checked_snapshot(folder, root, repo_id)


def not_cached_message(repo_id: str, revision: str | None, root: Path, error: BaseException) -> str:
    """Why `repo_id` (at `revision`) cannot be opened from the cache at `root`, in one line."""
    repo = root / repo_folder(repo_id)
    get = f"`attnlab get {repo_id}{'@' + revision if revision else ''}` downloads it"
    if not repo.is_dir():
        return f"{repo_id} is not in the Hugging Face cache at {root}; {get}"
    if type(error).__name__ == "IncompleteSnapshotError":
        return f"{repo_id}'s cached snapshot is incomplete ({' '.join(str(error).split())[:200]}); {get}"
    held = ", ".join(sorted(_names(repo / "refs"))) or "no named revisions"
    return (
        f"{repo_id} is in the Hugging Face cache at {root}, but not at revision {revision or 'main'!r} "
        f"(it holds: {held}); {get}"
    )


MAX_REF_BYTES = 1024  # a refs/ file holds one 40-digit commit hash


def refs_problem(repo: Path) -> str:
    """'' when every file under `repo`/refs is a small regular file, as huggingface_hub writes them; else
    which one is not (huggingface_hub opens and reads them whole: a FIFO there would hang it)."""
    for folder, _dirs, names in os.walk(repo / "refs"):
        for name in names:
            path = Path(folder) / name
            try:
                info = path.stat()
            except OSError as e:
                return f"{path} cannot be read ({e.strerror or e})"
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_REF_BYTES:
                return f"{path} is not a commit hash (a pipe, device, folder or large file); attnlab reads no further"
    return ""


def _names(refs: Path) -> list[str]:
    try:
        return [p.relative_to(refs).as_posix() for p in refs.glob("**/*") if p.is_file()][:12]
    except OSError:
        return []


def repo_folder(repo_id: str) -> str:
    """models--org--name (huggingface_hub.file_download.repo_folder_name)."""
    from huggingface_hub.file_download import repo_folder_name

    return repo_folder_name(repo_id=repo_id, repo_type="model")


def checked_snapshot(folder: Path, root: Path, repo_id: str) -> Path:
    """`folder` when it is `<root>/models--org--name/snapshots/<commit>` (a refs/ file that names anything
    else, '../..' included, is refused: huggingface_hub joins what the file says onto the path unchecked)."""
    repo = (root / repo_folder(repo_id)).resolve()
    if folder.resolve().parent != repo / "snapshots" or not folder.is_dir():
        raise NotCached(f"{repo_id}'s cache entry names a revision folder outside it ({str(folder)!r}); not opened")
    return folder


def cached_repo_of(folder: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(repo id, snapshot name: the commit) when `folder` is a snapshot folder of a cached repository;
    None otherwise. The id is spelled as huggingface_hub's scan spells it (models--org--name -> org/name)."""
    path = Path(folder).resolve()
    if cache_blobs(path) is None or path.parent.name != "snapshots":
        return None
    return path.parent.parent.name.removeprefix("models--").replace("--", "/"), path.name


def display_name(folder: str | os.PathLike[str]) -> str:
    """What a model opened from `folder` is called: 'org/name' for a cached snapshot (with '@<commit[:8]>'
    when it is not the revision refs/main names), else the folder's name."""
    found = cached_repo_of(folder)
    if found is None:
        return Path(folder).name
    repo_id, commit = found
    main = Path(folder).resolve().parent.parent / "refs" / "main"
    try:
        on_main = main.is_file() and main.read_text(encoding="utf-8", errors="replace").strip() == commit
    except OSError:
        on_main = False
    return repo_id if on_main else f"{repo_id}@{commit[:8]}"
