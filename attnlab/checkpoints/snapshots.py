"""Read a snapshots file (snapshots_file.py): the weights of one model at a few training steps.

    snaps = load_snapshots("translation")          # the bundled model and its snapshots
    snaps.steps                                     # (0, 200, …, 3000): the last one is the trained model
    snaps.model_at(200).trace("the cat sleeps .")   # a LiveModel with the weights after 200 updates

Everything is checked before a tensor is read: the safetensors header (header.py), the format, the steps, and
every tensor's name, dtype and shape against the model the snapshots belong to; the final weights' digest must
match that model's. Any problem gives one CheckpointError listing them all. The Snapshots class itself is
snapshot_weights.py (hf_revisions.py's CachedRevisions is one too).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

from attnlab import limits
from attnlab.checkpoints.assemble import all_finite, shape_text
from attnlab.checkpoints.errors import CheckpointError, Problems, name_list
from attnlab.checkpoints.header import read_layout
from attnlab.checkpoints.hf_cache import HF_CACHE_KEY
from attnlab.checkpoints.native import read_tensors
from attnlab.checkpoints.snapshot_weights import SNAPSHOTS_FILE_KEY, Snapshots
from attnlab.checkpoints.snapshots_file import SNAPSHOTS_FORMAT, snapshots_path, step_key, tensor_digest
from attnlab.engine.live import LiveModel

MAX_SNAPSHOTS = 64  # steps in one file (the bundled model keeps 4)
FLOAT_DTYPES = ("F16", "BF16", "F32")


def load_snapshots(source: str | os.PathLike[str] | LiveModel, model: LiveModel | None = None) -> Snapshots:
    """The snapshots of a model. `source`: a bundled model's name ("translation"), a snapshots file, a
    checkpoint (its <stem>.snapshots.safetensors), or a LiveModel loaded from a checkpoint that has one.
    `model`: the final model they belong to (default: loaded from the checkpoint beside the file)."""
    from attnlab.checkpoints.bundled import BUNDLED, bundled_path, load_bundled
    from attnlab.checkpoints.loader import load_checkpoint

    if (
        isinstance(source, LiveModel)
        and not source.metadata.get(SNAPSHOTS_FILE_KEY)
        and source.metadata.get(HF_CACHE_KEY)
    ):
        from attnlab.checkpoints.hf_revisions import cached_revisions  # the cache's revisions as training steps

        revisions = cached_revisions(source)
        if revisions is None:
            raise CheckpointError(
                f"The model {source.name!r} has no other cached revisions named by training step (step1000, …)"
            )
        return revisions
    if isinstance(source, LiveModel):
        model, found = source, source.metadata.get(SNAPSHOTS_FILE_KEY)
        if not found:
            raise CheckpointError(f"The model {source.name!r} has no training snapshots beside its checkpoint")
        path = Path(found)
    elif isinstance(source, str) and source in BUNDLED and not Path(source).exists():
        path = snapshots_path(bundled_path(source))
        model = model if model is not None else (load_bundled(source) if path.is_file() else None)
    else:
        path = Path(source).expanduser()
        if not path.name.endswith(".snapshots.safetensors"):
            path = snapshots_path(path)
    if not path.is_file():
        raise CheckpointError(f"Cannot load the snapshots {str(path)!r}: there is no file at that path")
    if model is None:
        checkpoint = path.with_name(path.name.removesuffix(".snapshots.safetensors") + ".safetensors")
        model = load_checkpoint(checkpoint)
    return read_snapshots(path, model)


def read_snapshots(path: Path, model: LiveModel) -> Snapshots:
    """Check `path` against `model` (header first, tensors only when it is sound) and read it."""
    problems = Problems(path)
    layout = read_layout(path, problems)
    if layout is None:
        raise snapshots_error(problems)
    meta = layout.metadata
    if meta.get("format") != SNAPSHOTS_FORMAT:
        problems.add(
            f"it is not an attnlab snapshots file (format {limits.excerpt(meta.get('format'))}, expected "
            f"{SNAPSHOTS_FORMAT!r})"
        )
        raise snapshots_error(problems)
    steps, final_step = parse_steps(meta, problems)
    expected = {name: tuple(t.shape) for name, t in model.module.checkpoint_tensors().items()}
    if meta.get("weights_sha256") != tensor_digest(model.module.checkpoint_tensors()):
        problems.add(
            f"these snapshots belong to another model: their final weights differ from those of {model.name!r} "
            "(keep each snapshots file beside the checkpoint it was written with)"
        )
    check_entries(layout.entries, steps, expected, problems)
    losses = parse_losses(meta.get("losses"), problems)
    tensors = None if problems or not layout.complete else read_tensors(path, layout.entries, problems)
    if tensors is not None:
        bad = [name for name, t in tensors.items() if not all_finite(t)]
        if bad:
            problems.add(f"{len(bad)} tensors hold NaN or infinite values: {name_list(bad)}")
    if problems or tensors is None:
        raise snapshots_error(problems)
    weights = {s: {n: tensors[step_key(s, n)].to(torch.float16) for n in expected} for s in steps}
    return Snapshots(path, model, final_step, weights, {s: v for s, v in losses.items() if s in weights})


def parse_steps(meta: dict[str, str], problems: Problems) -> tuple[list[int], int]:
    """The kept steps (ascending, each below the final step) and the final step, from the metadata."""
    try:
        steps = [int(s) for s in meta.get("steps", "").split(",")]
        final_step = int(meta.get("final_step", ""))
    except ValueError:
        problems.add(
            f"its steps ({limits.excerpt(meta.get('steps'))}) or final step "
            f"({limits.excerpt(meta.get('final_step'))}) are not whole numbers"
        )
        return [], 0
    if len(steps) > MAX_SNAPSHOTS:
        problems.add(f"it lists {len(steps):,} steps; attnlab reads at most {MAX_SNAPSHOTS}")
        return [], final_step
    if steps != sorted(set(steps)) or steps[0] < 0 or steps[-1] >= final_step:
        problems.add(
            f"its steps {limits.excerpt(meta.get('steps'))} are not distinct, ascending and between 0 and the "
            f"final step {final_step} (which is the checkpoint itself)"
        )
    return steps, final_step


def check_entries(entries: dict, steps: list[int], expected: dict[str, tuple[int, ...]], problems: Problems) -> None:
    """Every step holds exactly the model's checkpoint tensors, each a float of the model's shape."""
    wanted = {step_key(s, n): shape for s in steps for n, shape in expected.items()}
    missing = [k for k in wanted if k not in entries]
    extra = [k for k in entries if k not in wanted]
    if missing:
        problems.add(f"{len(missing)} tensors are missing: {name_list(missing)}")
    if extra:
        problems.add(f"{len(extra)} tensors belong to no step of this model: {name_list(extra)}")
    present = [k for k in wanted if k in entries]
    not_float = [f"{k} ({entries[k]['dtype']})" for k in present if entries[k]["dtype"] not in FLOAT_DTYPES]
    if not_float:
        problems.add(f"{len(not_float)} tensors are not floats: {name_list(not_float)}")
    misshapen = [
        f"{k} {shape_text(entries[k]['shape'])}, this model's {shape_text(wanted[k])}"
        for k in present
        if tuple(entries[k]["shape"]) != wanted[k]
    ]
    if misshapen:
        problems.add(f"{len(misshapen)} tensors have another shape than this model's: {name_list(misshapen, 4)}")


def parse_losses(value: str | None, problems: Problems) -> dict[int, float]:
    if not value:
        return {}
    """step -> loss; a loss that is not a finite float (1e999, a 400-digit number, text) is left out: the
    slider shows that step without its loss rather than refusing the snapshots, or the model beside them."""
    try:
        raw = limits.loads_bounded(value, "the losses", limits.MAX_CONFIG_CHARS)
        pairs = list(raw.items())
    except (ValueError, TypeError, AttributeError):
        problems.add(f"its losses entry is not a JSON object of step -> loss ({limits.excerpt(value)})")
        return {}
    losses = {}
    for step, loss in pairs:
        try:
            number = float(loss)
            if math.isfinite(number) and not isinstance(loss, bool):
                losses[int(step)] = number
        except (ValueError, TypeError, OverflowError):
            continue  # an unreadable loss: that step is shown without one
    return losses


def find_snapshots(model: LiveModel) -> tuple[Snapshots | None, str]:
    """(the snapshots of `model`, '') when its checkpoint has a snapshots file beside it, or when it was read
    from the Hugging Face cache where earlier revisions named by training step are cached too
    (hf_revisions.py); (None, why not) when that file cannot be used; (None, '') when there is none."""
    if not model.metadata.get(SNAPSHOTS_FILE_KEY):
        if model.metadata.get(HF_CACHE_KEY):  # read from the Hugging Face cache: its revisions named by step
            from attnlab.checkpoints.hf_revisions import cached_revisions

            return cached_revisions(model), ""
        return None, ""
    try:
        return load_snapshots(model), ""
    except CheckpointError as e:
        return None, str(e)


def snapshots_error(problems: Problems) -> CheckpointError:
    """One error listing every problem, naming the file as snapshots (not as a checkpoint)."""
    return CheckpointError(problems.message().replace("Cannot load the checkpoint", "Cannot load the snapshots", 1))
