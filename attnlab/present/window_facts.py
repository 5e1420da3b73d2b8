"""The small facts about a run that the window's widgets show or ask with: the status bar's counts and
warnings, the stage keys a widget names (the output bars, a site's weights, the kind of a site's grid), the
head-ablation choices, a lesson step's options, a token's text in a pinned run. Qt-free.

The widgets hold a Trace as an opaque handle (present/engine_api.py) and ask here; they never build or parse
a trace name themselves (the grammar is engine/names.py, this is its widget-facing side)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.engine import names
from attnlab.engine.options import ABLATION_MODES, RunOptions
from attnlab.engine.pairs import INPUT_CUT

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace
    from attnlab.present.lessons import Lesson

# the token lists of a run, with the word the status bar counts them by
TOKEN_SIDES = ((names.side_entry("src", "tokens"), "source"), (names.side_entry("tgt", "tokens"), "decoder"))
OUTPUT_KINDS = (names.LOGITS, names.PROBS)  # the stage kinds of the next-token output (logits, probabilities)
PROBS_KIND = names.PROBS  # the output probabilities' stage kind (the panel with the "Fixed 0–1 axis")
# the head-ablation combo: (mode, what it says); None = no ablation
ABLATE_CHOICES: tuple[tuple[str | None, str], ...] = (
    (None, "off"),
    ("zero", "zero it"),
    ("mean", "mean over positions"),
)
assert tuple(m for m, _ in ABLATE_CHOICES[1:]) == ABLATION_MODES  # one word per mode the engine knows


# ---- the status bar and the banner ------------------------------------------------------------------------------
def token_counts(trace: Trace) -> list[str]:
    """["5 source", "4 decoder"]: the tokens of each side the run read."""
    return [f"{len(trace[key])} {what}" for key, what in TOKEN_SIDES if key in trace]


def unknown_tokens(trace: Trace) -> int:
    """How many of the run's tokens were not in the vocabulary (became <unk>)."""
    return sum(tok == "<unk>" for key, _ in TOKEN_SIDES for tok in trace.get(key, []))


def input_cut_notices(trace: Trace) -> list[str]:
    """The run's notices that an input was longer than the model reads (and was cut)."""
    return [n for n in trace.notices if INPUT_CUT in n]


def device_text(trace: Trace, spread: bool) -> str:
    """ "Device: CPU · float32" (· weights spread out, when the layers live on more than one device)."""
    return f"Device: {trace.device.upper()} · {trace.options.dtype}" + (" · weights spread out" if spread else "")


# ---- keys a widget names -----------------------------------------------------------------------------------------
def site_kind(site: str) -> str:
    """ "enc.0.self" -> "enc.self": which grid of the model view a site's heads go in."""
    return names.site_kind(site)


def site_weights(site: str) -> str:
    """The stage key of a site's attention weights ("enc.0.self" -> "enc.0.self.weights")."""
    return names.site_entry(site, "weights")


def token_text(trace: Trace, token_id: int) -> str:
    """A token's text from the run's own tokens, else '#id' (a pinned run carries no tokenizer)."""
    for side in names.SIDES:
        ids, tokens = trace.get(names.side_entry(side, "ids")), trace.get(names.side_entry(side, "tokens"))
        if ids is not None and tokens:
            for i, t in zip(ids.tolist(), tokens, strict=False):
                if i == token_id:
                    return str(t)
    return f"#{token_id}"


# ---- lessons --------------------------------------------------------------------------------------------------
def lesson_options(lesson: Lesson, index: int, current: RunOptions) -> RunOptions:
    """The run options of a lesson's step `index`, on the device of the `current` options (the window's)."""
    return lesson.options(index, RunOptions(device=current.device))


# ---- the toggles' read-back ---------------------------------------------------------------------------------
def head_count(options: RunOptions, config: ModelConfig) -> int:
    """The heads a run of `options` has at each site of model `config` (the head spin box's range)."""
    return options.effective_heads(config)


def ablation_of(options: RunOptions, site: str, head: int) -> str | None:
    """How head `head` (from 0) of `site` is ablated in `options` ("zero", "mean"), or None."""
    return options.ablation_of(site, head)


def ablated_heads(options: RunOptions) -> int:
    """How many heads the run ablates, over every site."""
    return len(options.ablate)


# ---- File → Export --------------------------------------------------------------------------------------------------
def save_run(trace: Trace, path: Path) -> Path:
    """Write every array of the run to `path` (an .npz; the suffix added when missing); returns the path written."""
    path = path if path.suffix == ".npz" else path.with_name(path.name + ".npz")
    trace.save_npz(path)  # written whole or not at all (attnlab.fileio.atomic_write)
    return path
