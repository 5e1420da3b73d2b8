"""`attnlab get org/name[@revision]`: download a model from the Hugging Face Hub into the standard cache
(config, tokenizer and safetensors files only; never pickles or code) and print how to open it.

The Hub is HF_ENDPOINT when set; the cache is HF_HUB_CACHE (or HF_HOME/hub), or --cache-dir. Ctrl+C stops the
download and leaves nothing half-written in the cache (attnlab/checkpoints/hub_get.py).
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from attnlab.checkpoints import hub_get
from attnlab.checkpoints.hf_cache import cache_dir
from attnlab.limits import gb


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model", metavar="ORG/NAME[@REVISION]", help="a model id on the Hub, e.g. HuggingFaceTB/SmolLM2-135M"
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="the Hugging Face cache to download into (default: HF_HUB_CACHE, or HF_HOME/hub, or "
        "~/.cache/huggingface/hub)",
    )


def run(args: argparse.Namespace) -> int:
    endpoint = hub_get.endpoint_now()
    cache = Path(args.cache_dir).expanduser() if args.cache_dir else cache_dir()
    plan = hub_get.plan(args.model, endpoint=endpoint)  # GetRefused (a ValueError): one line, exit 2
    print(f"Downloading {plan.summary()} into {cache}", file=sys.stderr)
    snapshot = _download(plan, cache, endpoint)
    if snapshot is None:
        print("attnlab get: interrupted; nothing was written to the cache", file=sys.stderr)
        return 130
    print(f"Saved {plan.repo_id} in the cache: {snapshot}")
    # by id where attnlab will look for it (the cache the environment names), else by its folder
    name = plan.repo_id + ("" if plan.revision == "main" else f"@{plan.revision}")
    opener = name if args.cache_dir is None else str(snapshot)
    print(f"Open it:  attnlab {opener}")
    print(f'Trace it: attnlab trace --checkpoint {opener} --src "..." --out trace.npz')
    return 0


def _download(plan: hub_get.Plan, cache: Path, endpoint: str | None) -> Path | None:
    """The snapshot folder, or None when Ctrl+C stopped the download. It runs on a worker thread so that
    Ctrl+C reaches this one at once; the worker then stops at its next chunk and cleans up."""
    cancel = threading.Event()
    outcome: dict[str, object] = {}
    bar = _Bar(sys.stderr.isatty())

    finished = threading.Event()  # waited on, not Thread.join: an interrupted join marks the thread ended (3.11)

    def work() -> None:
        try:
            outcome["path"] = hub_get.download(plan, cache_dir=cache, endpoint=endpoint, progress=bar, cancel=cancel)
        except BaseException as e:  # handed to the main thread
            outcome["error"] = e
        finally:
            finished.set()

    threading.Thread(target=work, name="attnlab-get", daemon=True).start()
    try:
        while not finished.wait(0.2):
            pass
    except KeyboardInterrupt:
        cancel.set()
        finished.wait()  # the worker stops at its next chunk and removes what it staged
        bar.end()
        return None
    bar.end()
    error = outcome.get("error")
    if isinstance(error, hub_get.Cancelled):
        return None
    if isinstance(error, BaseException):
        raise error
    return Path(str(outcome["path"]))


class _Bar:
    """The download's progress on one stderr line (on a terminal only)."""

    def __init__(self, live: bool):
        self.live = live
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if self.live:
            share = 100 * done / total if total else 100.0
            print(f"\r  {gb(done)} of {gb(total)} ({share:.0f} %)   ", end="", file=sys.stderr, flush=True)
            self.shown = True

    def end(self) -> None:
        if self.shown:
            print(file=sys.stderr)
