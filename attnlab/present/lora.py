"""What a LoRA adapter changes (issue 35.1), Qt-free: for one adapted module, B, A and ΔW = scaling · B · A with
its rank and scaling (α/r, or α/√r for rsLoRA), as the adapter stores them (Hugging Face module names; ΔW laid out
as the base's weight: [out, in], or [in, out] for a fan_in_fan_out Conv1D); and the base model's run on the same
sentence (strength 0), pinned as A of Compare so that B − A shows what the fine-tune does to every stage.

A window, not a stage: the adapter's matrices do not change with the sentence, and the stage list is built from a
run's trace, which holds activations, not weights (ui/stages/lora.py; the quantization window is the same)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.present.views.model import MatrixView, MessageView, matrix_view

if TYPE_CHECKING:
    from attnlab.engine.adapter import AdapterWeights, LoraFactors
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

KIND = "lora"
NO_ADAPTER = "No LoRA adapter is open: open an adapter folder (adapter_config.json + adapter_model.safetensors)."


@dataclass(frozen=True)
class LoraView:
    """One adapted module: `maps` B | A | ΔW, the heading (rank, α, scaling) and notes."""

    module: str
    heading: str
    maps: tuple[MatrixView, ...]
    notes: tuple[str, ...]
    rank: int
    scaling: float
    kind = KIND


def adapter_of(model: LiveModel | None) -> AdapterWeights | None:
    return getattr(model, "adapter", None) if model is not None else None


def adapter_modules(model: LiveModel | None) -> list[str]:
    """The adapted modules (empty when no adapter is open)."""
    adapter = adapter_of(model)
    return adapter.module_names() if adapter is not None else []


def scaling_text(f: LoraFactors) -> str:
    if f.rslora:
        return f"rsLoRA: scaling = α / √r = {f.alpha:g} / √{f.rank} = {f.scaling:.4g}"
    return f"scaling = α / r = {f.alpha:g} / {f.rank} = {f.scaling:.4g}"


def strength_of(options: RunOptions) -> float:
    """The adapter strength the session's options ask for (0 the base, 1 the fine-tune)."""
    return float(options.adapter_strength)


def lora_view(model: LiveModel | None, module: str, strength: float = 1.0) -> LoraView | MessageView:
    """The view of `module` (a name from `adapter_modules`) at the run's adapter strength."""
    adapter = adapter_of(model)
    if adapter is None:
        return MessageView(KIND, NO_ADAPTER)
    f = adapter.factors.get(module)
    if f is None:
        return MessageView(KIND, f"The adapter does not change {module}.")
    delta = f.delta().numpy()  # [out, in] ([in, out] for fan_in_fan_out), float32
    axes_b, axes_a = ("output unit", "rank"), ("rank", "input feature")
    axes_d = ("input feature", "output unit") if f.fan_in_fan_out else ("output unit", "input feature")
    maps = (
        matrix_view(module + ".lora_B", f.b.numpy(), None, f"B  [{f.b.shape[0]} × r = {f.rank}]", axes=axes_b),
        matrix_view(module + ".lora_A", f.a.numpy(), None, f"A  [r = {f.rank} × {f.a.shape[1]}]", axes=axes_a),
        matrix_view(
            module + ".delta", delta, None, f"ΔW = scaling · B · A  [{delta.shape[0]} × {delta.shape[1]}]", axes=axes_d
        ),
    )
    heading = f"{module} · rank r = {f.rank} · α = {f.alpha:g} · {scaling_text(f)}"
    notes = (
        f"|ΔW| at most {float(np.abs(delta).max()):.3g}; ‖ΔW‖ = {float(np.linalg.norm(delta)):.3g}; "
        f"rank(ΔW) ≤ {f.rank} of {min(delta.shape)}",
        f"The run uses W + s·ΔW at adapter strength s = {strength:g} (0: the base model, 1: the fine-tuned one)"
        + (
            "; the weight is a Conv1D stored [in, out] (fan_in_fan_out), so ΔW = (B·A)ᵀ · scaling"
            if f.fan_in_fan_out
            else ""
        ),
    )
    return LoraView(module, heading, maps, notes, f.rank, f.scaling)


def base_run(model: LiveModel, src: object, tgt: object, options: RunOptions) -> Trace:
    """The base model's run (adapter strength 0) on the same sentence and options: Compare's A."""
    return model.trace(src, tgt, options.replace(adapter_strength=0.0))  # type: ignore[arg-type]
