"""`attnlab get org/name[@revision]`: download a model from the Hugging Face Hub into the standard cache
through huggingface_hub, config, tokenizer and safetensors files only (issue 34).

1. `plan`: one API call (`HfApi.model_info(files_metadata=True)`) lists the repository's files and sizes.
   A repository attnlab could not open from what it would download is refused here, before any byte is
   written: its weights only as pickles (.bin/.pt/…), its model only as its own Python code (`auto_map`:
   trust_remote_code), no config.json, not enough free disk.
2. `download`: `snapshot_download(allow_patterns=<the chosen files>)` into a staging cache beside the real one
   (`<cache>/.locks/attnlab-get-…`, a folder huggingface_hub's cache scan skips), so whatever huggingface_hub
   leaves of an interrupted download (a `.incomplete` file, a snapshot missing files, a ref) never reaches the
   cache. A per-byte progress callback rides on huggingface_hub's `tqdm_class`; the cancel flag is checked at
   each chunk it reports. When everything has landed, the staged repository is moved into the cache: blobs,
   then the snapshot's links, then refs, each by an atomic rename on the same file system, so the cache ends
   laid out exactly as huggingface_hub's own `snapshot_download` lays it out.

Never downloads pickles (.bin, .pt, .pth, .pkl, .ckpt) or code (.py). Qt-free; the network is touched only
here, and only when asked.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnlab import limits
from attnlab.checkpoints import hf_cache
from attnlab.limits import gb

# What attnlab downloads: config, tokenizer and safetensors files at the repository's top level
WANTED = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "chat_template.jinja",
    "*.model",  # SentencePiece (tokenizer.model, spiece.model, sentencepiece.bpe.model)
    "model*.safetensors",
    "model.safetensors.index.json",
)
PICKLES = ("*.bin", "*.pt", "*.pth", "*.pkl", "*.pickle", "*.ckpt")  # never downloaded, never unpickled
CODE = ("*.py",)
STAGING_PREFIX = "attnlab-get-"
MAX_INFO_BYTES = 64 << 20  # the API's answer about one repository (~1 kB a file)
COMMIT = re.compile(r"[0-9a-f]{40}")  # a git commit hash, as the Hub's API gives a revision's `sha`

Progress = Callable[[int, int], None]  # (bytes so far, bytes in all)


class GetRefused(ValueError):
    """A repository attnlab will not download, or a download that failed: the message is one line."""


class Cancelled(Exception):
    """The person cancelled the download (raised from inside huggingface_hub's progress callback)."""


@dataclass(frozen=True)
class Plan:
    """What `get` will download: the repository, the revision asked for, the commit it names, the files."""

    repo_id: str
    revision: str
    commit: str
    files: tuple[str, ...]
    total: int  # bytes of `files`

    def summary(self) -> str:
        """In words: "acme/tiny@main (commit 0123456789ab): 6 files, 1 MB"."""
        return f"{self.repo_id}@{self.revision} (commit {self.commit[:12]}): {len(self.files)} files, {gb(self.total)}"


def parse_id(text: str) -> tuple[str, str]:
    """("org/name", revision) of "org/name[@revision]" (revision "main" when none); GetRefused otherwise."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo_id, _, revision = text.strip().partition("@")
    if repo_id.count("/") != 1:
        raise GetRefused(f"{limits.excerpt(text)} is not a model id: write it as org/name, or org/name@revision")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise GetRefused(f"{limits.excerpt(repo_id)} is not a model id ({limits.cut(str(e), 160)})") from None
    return repo_id, revision or "main"


def endpoint_now() -> str | None:
    """HF_ENDPOINT as it is set now (None: huggingface_hub's default, https://huggingface.co)."""
    return os.environ.get("HF_ENDPOINT") or None


def chosen_files(names: list[str]) -> tuple[str, ...]:
    """The files of a repository attnlab downloads (top level only)."""
    return tuple(n for n in sorted(names) if "/" not in n and any(fnmatch.fnmatchcase(n, p) for p in WANTED))


def refusal(repo_id: str, names: list[str], config: dict | None) -> str:
    """Why this repository is not downloaded (empty: it is), from its file list and the config the Hub
    reports."""
    top = [n for n in names if "/" not in n]
    weights = [n for n in top if fnmatch.fnmatchcase(n, "model*.safetensors")]
    pickles = [n for n in top if any(fnmatch.fnmatchcase(n, p) for p in PICKLES)]
    code = [n for n in top if any(fnmatch.fnmatchcase(n, p) for p in CODE)]
    if isinstance(config, dict) and "auto_map" in config:
        shown = f" ({', '.join(code[:3])})" if code else ""
        return (
            f"{repo_id} needs its own Python code to build its model{shown} (auto_map in its config: "
            "trust_remote_code); attnlab never downloads or runs a repository's code"
        )
    if "config.json" not in top:
        return f"{repo_id} holds no config.json at its top level: it is not a model folder attnlab can open"
    if not weights:
        if pickles:
            return (
                f"{repo_id} holds its weights only as PyTorch pickles ({', '.join(pickles[:3])}); attnlab downloads "
                "safetensors only, never pickles (a safetensors conversion may exist under another id or revision)"
            )
        return f"{repo_id} holds no model*.safetensors weights at its top level"
    return ""


def plan(text: str, *, endpoint: str | None = None, token: str | bool | None = None) -> Plan:
    """The Plan for "org/name[@revision]" (one API call), or GetRefused (one line) before anything is written."""
    repo_id, revision = parse_id(text)
    try:
        info = model_info(repo_id, revision, endpoint, token)
    except GetRefused:
        raise
    except Exception as e:
        raise GetRefused(error_line(e, repo_id, revision, endpoint)) from e
    siblings = list(info.siblings or [])
    names = [s.rfilename for s in siblings]
    config = info.config if isinstance(info.config, dict) else None
    why = refusal(repo_id, names, config)
    if why:
        raise GetRefused(why)
    files = chosen_files(names)
    sizes = {s.rfilename: (s.lfs.size if s.lfs is not None else s.size) or 0 for s in siblings}
    if not isinstance(info.sha, str) or not COMMIT.fullmatch(info.sha):  # it names folders: '../..' would escape
        raise GetRefused(f"{endpoint or 'the Hub'} did not say which commit {repo_id}@{revision} is (a 40-digit hash)")
    return Plan(repo_id, revision, info.sha, files, sum(sizes[f] for f in files))


def model_info(repo_id: str, revision: str, endpoint: str | None, token: str | bool | None) -> Any:
    """`HfApi.model_info(repo_id, revision, files_metadata=True)` (the same request, hf_api.py), its answer read
    in chunks up to MAX_INFO_BYTES: an endless or huge answer is refused, not held in memory whole."""
    from urllib.parse import quote

    from huggingface_hub import constants
    from huggingface_hub.hf_api import ModelInfo
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    url = f"{endpoint or constants.ENDPOINT}/api/models/{repo_id}/revision/{quote(revision, safe='')}"
    headers = build_hf_headers(token=token)
    with get_session().stream(
        "GET", url, headers=headers, params={"blobs": True}, timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT
    ) as r:
        raw = bytearray()
        for chunk in r.iter_bytes():
            raw += chunk
            if len(raw) > MAX_INFO_BYTES:
                raise GetRefused(
                    f"{endpoint or 'the Hub'} answered more than {gb(MAX_INFO_BYTES)} about {repo_id}; not read"
                )
    hf_raise_for_status(type(r)(r.status_code, headers=r.headers, content=bytes(raw), request=r.request))
    return ModelInfo(**limits.loads_bounded(bytes(raw), "the Hub's answer", MAX_INFO_BYTES))


def download(
    the_plan: Plan,
    *,
    cache_dir: str | Path | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Download `the_plan`'s files into the cache and return the snapshot folder (what huggingface_hub's
    `snapshot_download` returns). On any failure or a cancel nothing new is left in the cache."""
    from huggingface_hub import snapshot_download

    cache = Path(cache_dir).expanduser() if cache_dir is not None else hf_cache.cache_dir()
    made = [p for p in (cache, cache / ".locks") if not p.exists()]  # removed again if left empty
    (cache / ".locks").mkdir(parents=True, exist_ok=True)
    room = shutil.disk_usage(cache).free
    if the_plan.total > room:
        _remove_empty(made)
        raise GetRefused(
            f"{the_plan.repo_id} needs {gb(the_plan.total)} and only {gb(room)} is free where the cache is ({cache})"
        )
    _clear_stale_staging(cache / ".locks")
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=cache / ".locks"))
    try:
        staged = snapshot_download(
            the_plan.repo_id,
            revision=the_plan.revision,
            cache_dir=staging,
            endpoint=endpoint,
            token=token,
            allow_patterns=list(the_plan.files),
            tqdm_class=progress_bars(the_plan.total, progress, cancel),
            max_workers=2,
        )
        _check_staged_config(the_plan.repo_id, Path(staged))
        _check_staged_weights(the_plan.repo_id, Path(staged))
        if cancel is not None and cancel.is_set():
            raise Cancelled
        return _move_in(staging, cache, Path(staged))
    except (Cancelled, KeyboardInterrupt, GetRefused):
        raise
    except Exception as e:
        raise GetRefused(error_line(e, the_plan.repo_id, the_plan.revision, endpoint)) from e
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(made)


def progress_bars(total: int, progress: Progress | None, cancel: threading.Event | None) -> type:
    """A tqdm class for huggingface_hub's `tqdm_class`: it draws nothing, reports the bytes written so far
    (snapshot_download's byte bars, unit "B", all count the same bytes: the most any of them holds) to
    `progress`, and raises Cancelled at the next chunk once `cancel` is set."""
    from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints (huggingface_hub needs it)

    bars: list[Any] = []
    lock = threading.Lock()

    class Bar(tqdm):  # tqdm is Any to mypy
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.counts = kwargs.get("unit") == "B"
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            with lock:
                bars.append(self)

        def update(self, n: float | None = 1) -> bool | None:
            if cancel is not None and cancel.is_set():
                raise Cancelled
            self.n += n or 0
            if self.counts:
                with lock:
                    done = max((int(b.n) for b in bars if b.counts), default=0)
                if done > total:  # an endless or lying body: stop before it fills the disk
                    raise GetRefused(
                        f"the Hub sent more than the {total:,} bytes it listed; nothing was written to the cache"
                    )
                if progress is not None:
                    progress(done, total)
            return None

    return Bar


def _check_staged_config(repo_id: str, snapshot: Path) -> None:
    """The downloaded config.json must not ask for remote code either (the Hub may not have reported it)."""
    try:
        config = limits.loads_bounded((snapshot / "config.json").read_bytes(), "config.json", limits.MAX_CONFIG_CHARS)
    except (OSError, ValueError) as e:
        raise GetRefused(f"{repo_id}: its config.json could not be read ({limits.cut(str(e), 160)})") from e
    why = refusal(repo_id, ["config.json", "model.safetensors"], config if isinstance(config, dict) else None)
    if why:
        raise GetRefused(why)


def _check_staged_weights(repo_id: str, snapshot: Path) -> None:
    """Each downloaded .safetensors must be one (a pickle or a lying header served under the name is refused)."""
    from attnlab.checkpoints.errors import Problems
    from attnlab.checkpoints.header import read_layout

    for path in sorted(snapshot.glob("*.safetensors")):
        problems = Problems(path)
        read_layout(path, problems)
        if problems:
            raise GetRefused(f"{repo_id}: the Hub's {path.name} is not a whole safetensors file ({problems.items[0]})")


def _move_in(staging: Path, cache: Path, staged_snapshot: Path) -> Path:
    """Move the staged repository into the cache: blobs, then snapshot entries (links, or files where the cache
    holds copies), then anything else huggingface_hub wrote (its tree listing), refs last, so that at every
    moment the cache holds only whole files and a ref names a whole snapshot. Returns the snapshot folder."""
    repo_folder = staged_snapshot.parent.parent
    target = cache / repo_folder.name
    rank = {"blobs": 0, "snapshots": 1, "refs": 3}
    entries = sorted(
        (p for p in repo_folder.rglob("*") if p.is_symlink() or p.is_file()),
        key=lambda p: (rank.get(p.relative_to(repo_folder).parts[0], 2), str(p)),
    )
    for src in entries:
        rel = src.relative_to(repo_folder)
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        replace = rel.parts[0] in ("refs", "trees")  # huggingface_hub rewrites these; blobs and pointers it keeps
        if not replace and (dst.is_symlink() or dst.exists()):
            continue
        if src.is_symlink():
            link = dst.with_name(f".{dst.name}.{os.getpid()}.link")
            os.symlink(os.readlink(src), link)
            os.replace(link, dst)
        else:
            os.replace(src, dst)
    for folder in repo_folder.rglob("*"):  # folders left empty there (blobs/ where the cache holds copies)
        if folder.is_dir() and not folder.is_symlink():
            (target / folder.relative_to(repo_folder)).mkdir(parents=True, exist_ok=True)
    tag = staging / "CACHEDIR.TAG"
    if tag.is_file() and not (cache / "CACHEDIR.TAG").exists():
        os.replace(tag, cache / "CACHEDIR.TAG")
    return target / staged_snapshot.relative_to(repo_folder)


def _clear_stale_staging(locks: Path) -> None:
    """Remove staging folders that a killed `get` left behind (their process is gone)."""
    for folder in locks.glob(f"{STAGING_PREFIX}*"):
        pid = folder.name.removeprefix(STAGING_PREFIX).split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove_empty(folders: list[Path]) -> None:
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            pass


def error_line(error: BaseException, repo_id: str, revision: str, endpoint: str | None) -> str:
    """One line for what went wrong talking to the Hub (huggingface_hub's errors, the network's, the disk's)."""
    from huggingface_hub import errors

    where = endpoint or "the Hugging Face Hub"
    status = getattr(getattr(error, "response", None), "status_code", None)
    if isinstance(error, errors.GatedRepoError):
        return f"{repo_id} is gated: accept its conditions on its page on {where}, then log in (`hf auth login`)"
    if isinstance(error, errors.RevisionNotFoundError):
        return f"{repo_id} has no revision {revision!r} on {where}"
    if isinstance(error, errors.RepositoryNotFoundError):
        if status == 401:
            return (
                f"{where} answered 401 (unauthorized) for {repo_id}: it does not exist, or it is private or gated; "
                "log in (`hf auth login`, or set HF_TOKEN) and try again"
            )
        return f"there is no model {repo_id} on {where} ({status or 404} not found)"
    if isinstance(error, errors.OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set: `attnlab get` needs the network (unset it to download)"
    if isinstance(error, errors.HfHubHTTPError) and status is not None:
        return f"{where} answered {status} for {repo_id}: {limits.cut(_first_line(error), 160)}"
    network = _network_words(error)
    if network:
        return f"{network} ({where}); nothing was written to the cache"
    if isinstance(error, OSError) and error.errno == 28:
        return "the disk is full: the download was stopped and nothing was written to the cache"
    if isinstance(error, errors.LocalEntryNotFoundError):
        return f"cannot reach {where}: check the connection (nothing was written to the cache)"
    return f"the download of {repo_id} failed ({type(error).__name__}: {limits.cut(_first_line(error), 200)})"


def _network_words(error: BaseException) -> str:
    """What a network failure was, from the httpx exception anywhere in its chain ('' when none)."""
    seen: BaseException | None = error
    while seen is not None:
        names = {c.__name__ for c in type(seen).__mro__}
        if type(seen).__module__.split(".")[0].startswith("httpx") or names & {"ConnectionError", "TimeoutError"}:
            if names & {"ConnectError", "ConnectionRefusedError"}:
                return "cannot reach the Hub: the connection was refused"
            if names & {"TimeoutException", "TimeoutError"}:
                return "the Hub did not answer in time"
            return "the connection dropped during the download"
        seen = seen.__cause__ or seen.__context__
    return ""


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
