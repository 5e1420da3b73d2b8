"""Every cached revision of a model as a training step: a Hugging Face repository that keeps its training
checkpoints as branches (Pythia: step1000, step2000, …, step143000; OLMo: step1000-tokens4B, …), some of them
in the cache, feeds the training-step slider the way a snapshots file does (snapshots.py).

The steps are the revisions whose refs name a step (`STEP_REF`) and whose config.json is the opened one's;
the opened revision is the last, trained, step, so it must name a step itself (open `org/name@step143000`,
or have main and step143000 both point at the cached commit, as Pythia's do). Each step's weights are its own
snapshot folder, read as that revision alone would be (no float16 copy), a few kept at a time.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attnlab import limits
from attnlab.bounded_read import FileRefused, confined, read_json
from attnlab.checkpoints.hf_cache import HF_CACHE_KEY, refs_problem
from attnlab.checkpoints.snapshot_weights import Snapshots
from attnlab.engine.live import LiveModel

STEP_REF = re.compile(r"step(\d+)(?:[-_].*)?")  # a branch or tag that names a training step
KEPT_MODELS = 2  # revisions built and kept at once (each is a whole model)
DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


@dataclass
class CachedRevisions(Snapshots):
    """`final` (the opened revision, at `final_step`) and the cached revisions before it, by step."""

    folders: dict[int, Path] = field(default_factory=dict)  # step -> its snapshot folder (earlier steps only)
    _built: OrderedDict[int, LiveModel] = field(default_factory=OrderedDict, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def steps(self) -> tuple[int, ...]:
        return (*sorted(self.folders), self.final_step)

    def loss_at(self, step: int) -> float | None:
        return None  # a revision says no loss

    def tensors_at(self, step: int) -> dict[str, torch.Tensor]:
        return {n: t.detach() for n, t in self.model_at(step).module.checkpoint_tensors().items()}

    def model_at(self, step: int) -> LiveModel:
        """The model of the revision at `step`, read from its own snapshot folder (the last few are kept)."""
        self._check_step(step)
        if step == self.final_step:
            return self.final
        with self._guard:
            if step not in self._built:
                self._built[step] = self._build(step)
                while len(self._built) > KEPT_MODELS:
                    self._built.popitem(last=False)
            self._built.move_to_end(step)
            return self._built[step]

    def _build(self, step: int) -> LiveModel:
        from attnlab.checkpoints.hf_folder import load_hf_folder

        weight = next(self.final.module.parameters())
        model = load_hf_folder(self.folders[step], device=str(weight.device), dtype=DTYPE_NAMES.get(weight.dtype))
        model.metadata["training_step"] = step
        return model


def cached_revisions(model: LiveModel) -> CachedRevisions | None:
    """The cached revisions of `model`'s repository as training steps, when `model` was read from a cached
    snapshot that names a step and at least one earlier step of the same config is cached; None otherwise."""
    found = model.metadata.get(HF_CACHE_KEY)
    if not isinstance(found, dict) or not found.get("folder"):
        return None
    folder = Path(str(found["folder"]))
    steps = revision_steps(folder)
    final_step = next((s for s, f in steps.items() if f.resolve() == folder.resolve()), None)
    if final_step is None:
        return None
    own = _config(folder)
    earlier = {s: f for s, f in steps.items() if s < final_step and own is not None and _config(f) == own}
    if not earlier:
        return None
    return CachedRevisions(path=folder, final=model, final_step=final_step, weights={}, folders=earlier)


def revision_steps(folder: Path) -> dict[int, Path]:
    """{training step: snapshot folder} of the revisions of `folder`'s cached repository whose refs name a
    step (huggingface_hub's scan of the cache; a revision with several step refs counts at the first)."""
    from huggingface_hub import scan_cache_dir

    repo = folder.resolve().parent.parent
    if refs_problem(repo):  # the scan would read it whole
        return {}
    try:
        info = scan_cache_dir(repo.parent)
    except (OSError, ValueError):  # CacheNotFound is a FileNotFoundError
        return {}
    steps: dict[int, Path] = {}
    for cached in info.repos:
        if cached.repo_path.resolve() != repo:
            continue
        for revision in cached.revisions:
            numbers = sorted(int(m.group(1)) for ref in revision.refs if (m := STEP_REF.fullmatch(ref)))
            if numbers:
                steps.setdefault(numbers[0], revision.snapshot_path)
    return steps


def _config(folder: Path) -> object:
    """A revision's config.json (None when it cannot be read): the steps must all be one model."""
    try:
        return read_json(confined(folder, "config.json", "config.json"), "config.json", limits.MAX_CONFIG_CHARS)
    except FileRefused:
        return None
