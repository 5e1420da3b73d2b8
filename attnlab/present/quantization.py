"""What 4 (or 8) bits do to a weight (issue 36.4), Qt-free: for one linear weight of a model dequantized on load
(LiveModel.metadata["quantization"], checkpoints/quantized.py), W, Ŵ and |W − Ŵ| when the full-precision original
is at hand, otherwise the stored levels and block scales beside Ŵ; and the original's run on the same sentence,
pinned as A of Compare so that B − A shows what the quantization did to every stage (a head's attention too).

The weights are the checkpoint's own (Hugging Face names, [out, in] as nn.Linear stores them): Ŵ is read again from
the quantized folder and dequantized by the same formula the loader used, W from the original's files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnlab.checkpoints import quantized as q
from attnlab.checkpoints import quantized_bnb as bnb
from attnlab.engine.output_budget import memory_refusal
from attnlab.present.views.model import MatrixView, MessageView, matrix_view

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

KIND = "quantization"
# [out, in] float32 maps held at once while a weight is shown: W, Ŵ, |W − Ŵ| and W − Ŵ (for its norm), and the
# original read in float32; without the original Ŵ, the codes' levels and the bitsandbytes work
MAPS_HELD, MAPS_ALONE = 5, 3


@dataclass(frozen=True)
class WeightError:
    """|W − Ŵ| summed up: the largest, the mean, and ‖W − Ŵ‖ / ‖W‖ (Frobenius)."""

    largest: float
    mean: float
    relative: float

    def text(self) -> str:
        return (
            f"|W − Ŵ|: at most {self.largest:.3g}, {self.mean:.3g} on average; "
            f"‖W − Ŵ‖ / ‖W‖ = {100 * self.relative:.2f} %"
        )


@dataclass(frozen=True)
class QuantizationView:
    """One weight: `maps` W | Ŵ | |W − Ŵ| (with the original) or code values | block scales | Ŵ (without);
    `levels` the values a 4-bit code stands for ([16]; None for int8); `error` None without the original."""

    weight: str
    heading: str
    maps: tuple[MatrixView, ...]
    notes: tuple[str, ...]
    levels: np.ndarray | None
    error: WeightError | None

    kind = KIND


def model_metadata(model: LiveModel | None) -> dict[str, Any]:
    """A copy of the open model's metadata (where its quantization fact lives); {} when no model is open."""
    return dict(model.metadata) if model is not None else {}


def quantization_fact(metadata: dict[str, Any]) -> dict[str, Any] | None:
    """The loader's fact about a dequantized model; None for a model that was not quantized."""
    fact = metadata.get(q.QUANTIZATION_KEY)
    return fact if isinstance(fact, dict) and isinstance(fact.get("folder"), str) else None


def quantization_text(metadata: dict[str, Any]) -> str:
    """What was done to the weights on load ("dequantized from …"), whichever reader said it (a folder's or a
    GGUF file's fact, both {"text": …}); '' for a model that was not quantized."""
    fact = metadata.get(q.QUANTIZATION_KEY)
    return str(fact.get("text", "")) if isinstance(fact, dict) else ""


def weight_names(metadata: dict[str, Any]) -> list[str]:
    """The weights the model's folder stores quantized (empty for a model that was not quantized)."""
    fact = quantization_fact(metadata)
    return q.quantized_names(fact["folder"]) if fact else []


def original_of(metadata: dict[str, Any], given: str | os.PathLike[str] | None = None) -> Path | None:
    """The full-precision original: `given` (a folder or a cached id), else what the quantized folder's
    config.json names in `_name_or_path` (a local folder, or a model id in the Hugging Face cache)."""
    from attnlab.checkpoints.errors import Problems
    from attnlab.checkpoints.tokenizer_files import read_json_file

    fact = quantization_fact(metadata)
    if given is not None or fact is None:
        return q.original_folder({}, given) if given is not None else None
    folder = Path(fact["folder"])
    return q.original_folder(read_json_file(folder / "config.json", Problems(folder)))


def _map(name: str, values: np.ndarray, title: str, symmetric: bool) -> MatrixView:
    return matrix_view(name, values, None, title, symmetric=symmetric, axes=("output unit", "input feature"))


def quantization_view(
    metadata: dict[str, Any], weight: str, original: str | os.PathLike[str] | None = None
) -> QuantizationView | MessageView:
    """The view of `weight` (a name from `weight_names`); `original` the full-precision folder, if at hand."""
    fact = quantization_fact(metadata)
    if fact is None:
        said = quantization_text(metadata)
        return MessageView(
            KIND,
            f"Its weights were {said}; W, Ŵ and |W − Ŵ| are shown for bitsandbytes, GPTQ and AWQ folders."
            if said
            else "This model was not quantized: its weights are the ones it was saved with.",
        )
    try:
        packed = q.packed_weight(fact["folder"], weight)
        too_big = memory_refusal(
            f"showing it in float32 ({packed.numel:,} values a map)",
            packed.numel * 4 * (MAPS_HELD if original else MAPS_ALONE),
        )
        if too_big:  # before Ŵ is computed
            return MessageView(KIND, f"{weight} cannot be shown: {too_big}.")
        w_hat = bnb.dequantized(packed).numpy()  # [out, in] float32, as the loader computed it
        w = _original_weight(original, weight, w_hat.shape)
    except (ValueError, OSError) as e:
        return MessageView(KIND, f"{weight} cannot be shown: {e}")
    scheme = "LLM.int8" if packed.scheme == "int8" else packed.scheme
    heading = f"{weight} · {scheme}, {packed.bits:.3g} bits per weight · {w_hat.shape[0]} × {w_hat.shape[1]}"
    notes = [_scale_note(packed)]
    levels = packed.levels.numpy() if packed.levels is not None else None
    if levels is not None:
        notes.append("the 16 levels a code stands for: " + ", ".join(f"{v:.3g}" for v in levels))
    if w is None:
        maps = (
            _map(weight + ".codes", _code_values(packed), "the stored code's level (before its scale)", True),
            _map(weight + ".scales", _scales_matrix(packed), "block scales", False),
            _map(weight, w_hat, "Ŵ = level × scale", True),
        )
        notes.append("Open the full-precision original to see W and |W − Ŵ| (it is not in the cache or beside it).")
        return QuantizationView(weight, heading, maps, tuple(notes), levels, None)
    diff = np.abs(w - w_hat)  # [out, in]
    error = WeightError(float(diff.max()), float(diff.mean()), float(np.linalg.norm(w - w_hat) / np.linalg.norm(w)))
    maps = (
        _map(weight + ".original", w, "W (the full-precision original)", True),
        _map(weight, w_hat, "Ŵ (dequantized)", True),
        _map(weight + ".error", diff, "|W − Ŵ|", False),
    )
    return QuantizationView(weight, heading, maps, (error.text(), *notes), levels, error)


def _original_weight(original: str | os.PathLike[str] | None, weight: str, shape: tuple[int, ...]) -> np.ndarray | None:
    if original is None:
        return None
    found = q.folder_tensors(original, [weight]).get(weight)
    if found is None:
        raise ValueError(f"the original ({original}) has no tensor {weight}")
    if tuple(found.shape) != tuple(shape) or not found.is_floating_point():
        raise ValueError(f"the original's {weight} is {list(found.shape)} {found.dtype}, not a float {list(shape)}")
    return found.float().numpy()


def _code_values(p: bnb.Packed) -> np.ndarray:
    """Each weight's stored code as the level it stands for (4-bit: quant_map[code], in −1 … 1; int8: code / 127;
    GPTQ / AWQ: code − its group's zero, a whole number)."""
    if p.zeros is not None and p.groups is not None:
        return (p.codes - p.zeros[:, p.groups]).float().numpy()  # [out, in]
    if p.levels is None:
        return p.codes.float().numpy() / 127.0  # [out, in]
    return p.levels[p.codes.long()].reshape(p.shape).numpy()


def _scales_matrix(p: bnb.Packed) -> np.ndarray:
    """The block scales laid out as the blocks lie: [out, in / blocksize] when blocks tile the rows, else one row."""
    scales = p.scales.numpy()
    rows, cols = p.shape
    if p.zeros is not None:
        return scales  # [out, groups]: GPTQ / AWQ keep one scale per output and group of inputs
    if p.scheme == "int8":
        return scales[:, None]  # [out, 1]: one scale a row
    if cols % p.blocksize == 0:
        return scales.reshape(rows, cols // p.blocksize)
    return scales[None, :]


def _scale_note(p: bnb.Packed) -> str:
    if p.zeros is not None:
        groups = p.scales.shape[1]
        return (
            f"a scale and a zero per output and group of {p.blocksize} inputs ({groups} groups): "
            "w = scale × (code − zero)"
        )
    if p.scheme == "int8":
        return f"one scale per output row ({p.scales.numel()} scales): w = code × scale / 127"
    nested = ", themselves stored in 8 bits (double quantization)" if p.nested else ""
    return f"one scale per block of {p.blocksize} weights ({p.scales.numel()} blocks{nested}): w = level × scale"


# ---- Compare: the original's run on the same sentence ----------------------------------------------------------
def load_original(path: str | os.PathLike[str]) -> LiveModel:
    """The full-precision original, held in float32 (so B − A is the quantization's doing, not a precision's)."""
    from attnlab.checkpoints.loader import load_checkpoint

    return load_checkpoint(path, dtype="float32")


def original_run(original: LiveModel, text: str, tgt: Any, options: RunOptions) -> Trace:
    """The original's run on the window's sentence (`text`, and the decoder input `tgt`: text or ids), with the
    same options: the A of Compare, when B is the quantized model's run."""
    src, target = original.prompt_sides(text, tgt)
    return original.trace(src, target, options)
