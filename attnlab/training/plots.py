"""The loss curve of a training run, as CSV (every step) and PNG (matplotlib, no screen needed)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

from attnlab.fileio import atomic_write

COLUMNS = ("step", "loss", "nll", "lr", "tokens", "epoch", "seconds", "cpu_seconds")


def write_loss_csv(history: list[dict], path: str | os.PathLike[str]) -> Path:
    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(COLUMNS)
            for row in history:
                writer.writerow([_fmt(row[c]) for c in COLUMNS])

    return atomic_write(path, write)


def _fmt(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def moving_average(values: list[float], window: int) -> list[float]:
    """Mean of the last `window` values at each point (fewer at the start)."""
    out: list[float] = []
    total = 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_loss_png(history: list[dict], path: str | os.PathLike[str], title: str) -> Path:
    """Loss per step (faint), its moving average, the plain cross-entropy when it differs (label smoothing),
    and the learning rate on a second axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    steps = [r["step"] for r in history]
    window = max(len(history) // 50, 1)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(steps, [r["loss"] for r in history], color="tab:blue", alpha=0.25, linewidth=0.8)
    ax.plot(
        steps,
        moving_average([r["loss"] for r in history], window),
        color="tab:blue",
        label=f"training loss (moving average of {window})",
    )
    if any(abs(r["loss"] - r["nll"]) > 1e-6 for r in history):
        ax.plot(
            steps,
            moving_average([r["nll"] for r in history], window),
            color="tab:green",
            label="cross-entropy without label smoothing",
        )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss per token (log scale)")
    ax.grid(True, which="both", alpha=0.3)
    lr_axis = ax.twinx()
    lr_axis.plot(steps, [r["lr"] for r in history], color="tab:orange", linewidth=1, label="learning rate")
    lr_axis.set_ylabel("learning rate")
    lines = ax.get_legend_handles_labels()
    more = lr_axis.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right")
    ax.set_title(title)
    fig.tight_layout()
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, format=path.suffix.lstrip(".") or "png"))
    finally:
        plt.close(fig)
    return path
