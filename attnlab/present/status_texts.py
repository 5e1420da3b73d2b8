"""The words of the main window's status bar and of the banner above the stage (when the numbers mean nothing:
a random model, a loader's notice, unknown tokens, a sentence outside a classroom model's language, a run
away from the trained model, an older snapshot's weights). Qt-free; ui/window/window_status.py puts them in
its labels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.present.decoder_input import written_for_banner
from attnlab.present.facts import untrained_banner
from attnlab.present.lexicon import out_of_domain_text
from attnlab.present.training_steps import step_banner
from attnlab.present.window_facts import device_text, input_cut_notices, token_counts, unknown_tokens

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace

RANDOM_BANNER = "Randomly initialised model — attention is noise: nothing here was learned."
CLASSROOM_NOTE = (
    "Classroom model ({what}), trained on short generated sentences with a small vocabulary: "
    "other sentences still run, but then its outputs are meaningless."
)
WIDEST_TIMING = "compute 8888.8 ms · paint 8888.8 ms"  # the timing label keeps the width of this text
UNKNOWN_TOKENS = (
    "{n} token(s) are not in this model's vocabulary and became <unk>: "
    "the model has never seen them, so expect meaningless output."
)


@dataclass(frozen=True)
class StatusTexts:
    """The status bar's texts for one run."""

    device: str  # "Device: CPU · float32"
    device_tip: str  # where the weights live, when they are spread over devices ('' otherwise)
    timing: str  # "compute 12.3 ms · paint 4.5 ms"
    tokens: str  # "Tokens: 5 source + 4 decoder"
    notices: tuple[str, ...]  # the run's notices


def model_name(model: LiveModel | None) -> str:
    """The open model's name ('' with none open)."""
    return str(model.name) if model is not None else ""


def still_showing(model: LiveModel | None) -> str:
    """'still showing translation' (or 'no model is open'), said after an open that failed or was stopped."""
    return f"still showing {model.name}" if model is not None else "no model is open"


def failed_open_text(what: str, model: LiveModel | None) -> str:
    """'Could not open x.safetensors — still showing translation' for the status bar after a failed open."""
    name = Path(what).name if what and not what.startswith("the bundled") else (what or "the model")
    return f"Could not open {name} — {still_showing(model)}"


def classroom_description(name: str) -> str:
    """'translation' -> 'English → French translation, encoder-decoder'."""
    from attnlab.checkpoints import BUNDLED

    text = BUNDLED.get(str(name), str(name)).replace("->", "→")
    return text.replace(" (", ", ").rstrip(")")


def status_texts(trace: Trace, model: LiveModel | None, paint_ms: float) -> StatusTexts:
    """The status bar's texts for `trace`, run by `model`, whose last repaint took `paint_ms`."""
    info = trace.info
    spread = model.metadata.get("placement") if model is not None else None  # layers over GPU, host, disk
    compute_ms = info.get("job_ms", info.get("compute_ms", 0.0))
    return StatusTexts(
        device=device_text(trace, bool(spread)),
        device_tip=f"Where the weights live: {spread}" if spread else "",
        timing=f"compute {compute_ms:.1f} ms · paint {paint_ms:.1f} ms",
        tokens="Tokens: " + " + ".join(token_counts(trace)),
        notices=tuple(trace.notices),
    )


def _model_warnings(model: LiveModel | None, src: str, tgt: str) -> list[str]:
    """What the open model says before any run: random, a loader's notice, a sentence its classroom
    language lacks."""
    meta = model.metadata if model is not None else {}
    warnings = [RANDOM_BANNER] if meta.get("random") else []
    if meta.get("notice"):
        warnings.append(str(meta["notice"]))
    if model is not None and meta.get("classroom_model") and not meta.get("random"):
        side = "src" if model.config.has_encoder else "tgt"
        typed = src if model.config.has_encoder else (tgt or src)
        read = model.typed_form(typed or "", side)  # what the model reads: "don't" is "do not"
        warnings.append(out_of_domain_text(str(meta["classroom_model"]), read))
    return warnings


def banner(trace: Trace, model: LiveModel | None, src: str, tgt: str, final_step: int | None) -> tuple[str, str]:
    """(text, level) of the banner above the stage: level "warning" when something makes the numbers mean
    little, "info" for a classroom model's quieter note or a snapshot's step ('' text: no banner).
    `final_step`: the trained model's step when training snapshots are open, else None."""
    meta = model.metadata if model is not None else {}
    warnings = _model_warnings(model, src, tgt)
    warnings += input_cut_notices(trace)  # an input longer than the model reads
    warnings.append(written_for_banner(trace))  # a typed decoder input beside another sentence
    untrained = untrained_banner(trace)
    if untrained and not meta.get("random"):
        warnings.append(untrained)
    unknown = unknown_tokens(trace)
    if unknown and not meta.get("random"):
        warnings.append(UNKNOWN_TOKENS.format(n=unknown))
    warnings = [w for w in warnings if w]
    lines = warnings or (
        [CLASSROOM_NOTE.format(what=classroom_description(meta["classroom_model"]))]
        if meta.get("classroom_model")
        else []
    )
    step = step_banner(trace.info.get("training_step"), final_step) if final_step is not None else ""
    if step:  # an earlier snapshot's weights (the trained model's step says nothing)
        lines = [step, *lines]
    return "\n".join(dict.fromkeys(lines)), "warning" if warnings else "info"
