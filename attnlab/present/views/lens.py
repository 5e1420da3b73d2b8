"""The logit lens as plain data: layers × positions, each cell the token the model would predict if it stopped
after that layer (its text drawn in the cell), its probability as the colour, and the top-k on hover.

The numbers are the trace's `lens.ids` and `lens.probs` ([L + 1, T, k], engine/logit_lens.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.logit_lens import lens_norm
from attnlab.engine.trace import Trace
from attnlab.present import words
from attnlab.present.facts import tokens
from attnlab.present.labels import elide_label, printable_label
from attnlab.present.position_range import first_of, lens_side, window_for, window_labels
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, matrix_view
from attnlab.present.views.output import known_tokens

CELL_CHARS = 6  # a cell's token text is cut to this many characters (the hover has it whole)


@dataclass(frozen=True)
class LensView:
    matrix: MatrixView  # [L + 1, T]: the top token's probability; rows the residual streams, columns positions
    cell_texts: list[list[str]]  # [L + 1][T]: the top token, shortened for the cell
    hover: list[list[str]]  # [L + 1][T]: where the cell is, and the top-k tokens with their probabilities
    ids: np.ndarray  # [L + 1, T, k] int64
    probs: np.ndarray  # [L + 1, T, k] float32
    norm: str  # the final norm the lens applied: "trained", "plain" or "none" (engine/logit_lens.lens_norm)
    note: str


def lens_rows(n_rows: int) -> list[str]:
    """'embeddings', 'layer 1', …: the residual stream each row of the lens reads."""
    return ["embeddings"] + [f"layer {i}" for i in range(1, n_rows)]


def norm_sentence(trace: Trace) -> str:
    """What the lens applies before the output projection, in this run."""
    norm = lens_norm(trace.config.final_norm, trace.options.final_norm)
    word = "RMSNorm" if trace.config.norm == "rmsnorm" else "LayerNorm"
    if norm == "trained":
        return f"Each row goes through the model's own final {word}, then the output projection."
    if norm == "plain":
        return "The model has no final norm; this run adds a parameter-free LayerNorm, and so does the lens."
    if trace.config.final_norm:
        return f"The final {word} is switched off in this run, so the lens applies the output projection alone."
    return "This model has no final norm: the lens applies the output projection alone."


def lens_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> LensView | MessageView:
    if names.LENS_PROBS not in trace or names.LENS_IDS not in trace:
        return MessageView(stage.kind, "The logit lens needs a recorded run (every layer's output).")
    side = lens_side(trace)
    window = window_for(trace, side, display.positions)  # the columns: only the window's positions
    cut = (slice(None), window.rows) if window is not None and not window.whole else slice(None)
    probs = np.asarray(trace.read(names.LENS_PROBS, cut), dtype=np.float32)  # [L + 1, T, k]
    ids = np.asarray(trace.read(names.LENS_IDS, cut), dtype=np.int64)  # [L + 1, T, k]
    n_rows, n_pos, _k = probs.shape
    name = vocab if vocab is not None else known_tokens(trace)
    total = window.total if window is not None else n_pos
    labels = window_labels(tokens(trace, side, total), window)
    cols = [printable_label(t) for t in labels or [str(i) for i in range(n_pos)]]
    rows = lens_rows(n_rows)
    texts = {i: printable_label(name(i)) for i in np.unique(ids).tolist()}
    cell_texts = [[elide_label(texts[int(ids[r, c, 0])], CELL_CHARS) for c in range(n_pos)] for r in range(n_rows)]
    hover = [
        [
            f"{rows[r]}, after “{cols[c]}”: "
            + " · ".join(f"{texts[int(i)]} {p:.1%}" for i, p in zip(ids[r, c], probs[r, c], strict=True))
            for c in range(n_pos)
        ]
        for r in range(n_rows)
    ]
    top = probs[:, :, 0]  # [L + 1, T]
    stack = words.word(names.side_stack(side)).lower()
    title = f"Logit lens: the top prediction after each {stack} layer"
    axes = ("", "")  # the row and column labels say it; the rows get the height the titles would take
    matrix = matrix_view(
        names.LENS_PROBS,
        top,
        rows,
        title,
        cols=cols,
        symmetric=False,
        levels=(0.0, 1.0),
        axes=axes,
        first_col=first_of(window),
    )
    agree = int((ids[:, :, 0] == ids[-1, :, 0]).sum()) - n_pos
    note = (
        f"{norm_sentence(trace)} Colour: the top token's probability. The last row is the model's own prediction; "
        f"{agree} of the {(n_rows - 1) * n_pos} earlier cells already name that token. Hover a cell for the top "
        f"{ids.shape[2]}."
    )
    norm = lens_norm(trace.config.final_norm, trace.options.final_norm)
    return LensView(matrix, cell_texts, hover, ids, probs, norm, note)
