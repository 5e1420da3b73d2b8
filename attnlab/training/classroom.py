"""Build a classroom model end to end: train, evaluate on the held-out split, save the checkpoint with its
figures in the metadata, and write the loss curve (CSV + PNG) and the figures (JSON) beside it.

    <out_dir>/<name>.safetensors
    <out_dir>/training/<name>-loss.csv, <name>-loss.png, <name>-eval.json
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.engine.live import LiveModel
from attnlab.fileio import atomic_write_text
from attnlab.training.recipes import RECIPES, Recipe

if TYPE_CHECKING:
    from attnlab.checkpoints.additive import AdditiveModel
    from attnlab.training.train import TrainResult


def recipe_for(name: str, steps: int | None = None, n_pairs: int | None = None) -> Recipe:
    if name not in RECIPES:
        raise ValueError(f"unknown classroom model {name!r}; choose one of {', '.join(RECIPES)}")
    recipe = RECIPES[name]
    if steps is not None:
        if steps < 1:
            raise ValueError(f"--steps must be at least 1 (got {steps})")
        recipe = recipe.replace(steps=steps, warmup=min(recipe.warmup, max(steps // 4, 1)))
    if n_pairs is not None:
        if n_pairs < 20:
            raise ValueError(f"--pairs must be at least 20 (got {n_pairs}), so both splits hold sentences")
        recipe = recipe.replace(n_pairs=n_pairs)
    return recipe


def report_paths(checkpoint: Path) -> dict[str, Path]:
    folder = checkpoint.parent / "training"
    stem = checkpoint.stem
    return {
        "csv": folder / f"{stem}-loss.csv",
        "png": folder / f"{stem}-loss.png",
        "json": folder / f"{stem}-eval.json",
    }


def eval_summary(figures: dict) -> dict:
    """What goes into the checkpoint metadata: the figures without the example errors."""
    return {k: v for k, v in figures.items() if k != "examples_of_errors"}


def save_with_figures(model: LiveModel, checkpoint: Path, figures: dict) -> Path:
    """Store the figures in the checkpoint (re-saving it) and in <dir>/training/<stem>-eval.json."""
    from attnlab.checkpoints import save_checkpoint

    model.metadata["eval"] = eval_summary(figures)
    save_checkpoint(model, checkpoint)
    paths = report_paths(checkpoint)
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    record = {
        "model": model.name,
        "checkpoint": checkpoint.name,
        "corpus": model.metadata.get("corpus"),
        "training": model.metadata.get("training"),
        "eval": figures,
    }
    atomic_write_text(paths["json"], json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return paths["json"]


def save_additive_figures(model: AdditiveModel, checkpoint: Path, figures: dict) -> Path:
    """The additive GRU model's figures in <dir>/training/<stem>-eval.json (its weights file is left as is)."""
    path = report_paths(checkpoint)["json"]
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"model": model.name, "checkpoint": checkpoint.name, "training": model.metadata, "eval": figures}
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return path


def save_training_snapshots(result: TrainResult, checkpoint: Path, final_step: int) -> Path:
    """<name>.snapshots.safetensors beside `checkpoint`, tied to its final weights."""
    from attnlab.checkpoints.snapshots_file import save_snapshots, snapshots_path
    from attnlab.training.train import snapshot_losses

    return save_snapshots(
        snapshots_path(checkpoint),
        result.snapshots,
        final_step,
        result.model.module.checkpoint_tensors(),
        snapshot_losses(result.history, result.snapshots),
    )


def build(
    name: str,
    seed: int,
    out_dir: str | os.PathLike[str],
    steps: int | None = None,
    n_pairs: int | None = None,
    progress: bool = True,
    eval_n: int | None = None,
    threads: int = 2,
    snapshot_steps: tuple[int, ...] = (),
) -> dict:
    """Train one classroom model and write everything; returns the figures. `snapshot_steps`: also keep the
    weights at these steps, in <out_dir>/<name>.snapshots.safetensors (float16)."""
    from attnlab.checkpoints import save_checkpoint
    from attnlab.training.evaluate import evaluate
    from attnlab.training.plots import plot_loss_png, write_loss_csv
    from attnlab.training.train import train

    recipe = recipe_for(name, steps, n_pairs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = out_dir / f"{name}.safetensors"
    result = train(recipe, seed, progress=progress, threads=threads, snapshot_steps=snapshot_steps)
    save_checkpoint(result.model, checkpoint)  # saved at once: an evaluation failure loses no training
    if result.snapshots:
        save_training_snapshots(result, checkpoint, recipe.steps)
    paths = report_paths(checkpoint)
    paths["csv"].parent.mkdir(parents=True, exist_ok=True)
    write_loss_csv(result.history, paths["csv"])
    plot_loss_png(
        result.history, paths["png"], f"{name}: {recipe.steps} steps, seed {seed}, {result.seconds / 60:.1f} min"
    )
    figures = evaluate(result.model, eval_n)
    save_with_figures(result.model, checkpoint, figures)
    return figures
