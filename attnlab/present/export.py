"""What an export writes, Qt-free: the table of numbers a stage shows (for CSV), the handout page that lists
rendered stages (index.html), safe file names, and the one way files are written.

The pictures themselves are drawn by the panels (attnlab/ui/window/export.py); everything here works on a Trace.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.fileio import atomic_write
from attnlab.present.stages import Stage, ViewState

if TYPE_CHECKING:
    from attnlab.engine.trace import Trace

# Attention stage kinds whose picture is one [Tq × Tk] matrix of the selected head.
MATRIX_STEPS = {
    "scores": "scores",
    "scaled": "scaled",
    "capped": "capped",  # Gemma 2's soft-capped scores
    "mask": "mask",
    "bias": "bias",
    "biased": "biased",
    "masked": "masked",
    "weights": "weights",
    "heads": "weights",
    "lines": "weights",
}
# Attention stage kinds whose picture is [Tq × columns] vectors.
VECTOR_STEPS = {"context": "context", "concat": "concat", "attn_out": "out"}
# memory a number of a CSV export holds: a Python float in its row's list (24 + 8), its text (about 24
# characters) in the writer's buffer and again in the string returned
CSV_BYTES_PER_CELL = 80
PICTURE_COPIES = 2  # a picture drawn to PNG: its ARGB32 image (4 bytes a pixel) and the PNG encoder's copy


def write_atomically(path: str | os.PathLike[str], writer: Callable[[Path], object]) -> Path:
    """Write a whole file through `writer(tmp_path)` and rename it over `path` only once complete
    (attnlab.fileio.atomic_write: the one place for that rule)."""
    return Path(atomic_write(path, writer))


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """`text` written whole to `path`; RunTooBig (one line, nothing written) when its folder has not the room."""
    from attnlab.engine.memory import RunTooBig  # the budget loads torch: not at the window's first paint
    from attnlab.engine.output_budget import disk_refusal

    refusal = disk_refusal(f"writing {path}", path, len(text))
    if refusal:
        raise RunTooBig(f"{refusal}; nothing was written")
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def check_picture(width: int, height: int, scale: float) -> None:
    """RunTooBig (one line) when a picture of `width` × `height` logical pixels drawn at `scale` cannot fit the
    memory there is (pictures are drawn and written one at a time)."""
    from attnlab.engine.output_budget import check_memory

    w, h = round(width * scale), round(height * scale)
    check_memory(f"a picture of {w} × {h} pixels", PICTURE_COPIES * 4 * w * h)


@dataclass(frozen=True)
class Table:
    """A labelled matrix: `rows[i]` names row i, `columns[j]` column j, `values[i][j]` the number."""

    corner: str  # what the first column holds, e.g. "query \\ key"
    rows: list[str]
    columns: list[str]
    values: list[list[float]]

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([self.corner, *self.columns])
        for label, row in zip(self.rows, self.values, strict=True):
            writer.writerow([label, *(repr(float(v)) for v in row)])
        return out.getvalue()


def _tokens(trace: Trace, side: str, n: int) -> list[str]:
    """The first `n` token strings of a side, numbered so repeated tokens stay distinct ('3:the')."""
    tokens = list(trace.get(names.side_entry(side, "tokens")) or [])
    return [f"{i}:{tokens[i] if i < len(tokens) else '?'}" for i in range(n)]


def _site_sides(site: str) -> tuple[str, str]:
    """(query side, key side) of an attention site: cross-attention's keys are the source."""
    stack, _index, kind = names.split_site(site)
    query = names.stack_side(stack)
    return query, ("src" if kind == "cross" else query)


def _matrix(values: Any) -> list[list[float]]:  # a numpy array
    return [[float(v) for v in row] for row in values.tolist()]


def _table(corner: str, rows: list[str], columns: list[str], data: Any) -> Table:
    """The Table of `data` ([rows, columns]), counted before its numbers are made (RunTooBig, one line)."""
    from attnlab.engine.output_budget import check_memory

    check_memory(f"a table of {len(rows):,} × {len(columns):,} numbers", len(rows) * len(columns) * CSV_BYTES_PER_CELL)
    return Table(corner, rows, columns, _matrix(data))


def _numbered(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{j}" for j in range(n)]


def stage_table(trace: Trace, stage: Stage, view: ViewState) -> Table:
    """The numbers a stage shows as one labelled table (attention stages: the selected head).

    Raises ValueError for a stage with no matrix to export (the token list is exported as ids)."""
    head = min(view.head, trace.n_heads - 1)
    if stage.site and (stage.kind in MATRIX_STEPS or stage.kind == "qkv"):
        step = MATRIX_STEPS.get(stage.kind, "q")
        data = trace.read(names.site_entry(stage.site, step), head)  # [Tq, Tk] (or [Tq, dk] for q): one head
        q_side, k_side = _site_sides(stage.site)
        cols = _numbered("dim ", data.shape[1]) if step == "q" else _tokens(trace, k_side, data.shape[1])
        corner = f"head {head + 1} · {'query' if step != 'q' else 'token'} \\ {'key' if step != 'q' else 'q dim'}"
        return _table(corner, _tokens(trace, q_side, data.shape[0]), cols, data)
    if stage.site and stage.kind in VECTOR_STEPS:
        data = trace[names.site_entry(stage.site, VECTOR_STEPS[stage.kind])]  # [Tq, d]
        return _table(
            "token \\ dim",
            _tokens(trace, _site_sides(stage.site)[0], data.shape[0]),
            _numbered("dim ", data.shape[1]),
            data,
        )
    if stage.side:
        step = "ids" if stage.kind == "tokens" else stage.kind
        data = trace[names.side_entry(stage.side, step)]  # [T, d] or [T] ids
        if data.dim() == 1:
            return Table("token", _tokens(trace, stage.side, data.shape[0]), ["id"], [[float(v)] for v in data])
        return _table("token \\ dim", _tokens(trace, stage.side, data.shape[0]), _numbered("dim ", data.shape[1]), data)
    if stage.layer and stage.kind in ("addnorm", "ffn"):
        name = (
            names.norm_entry(names.norm(stage.layer, stage.norm or 1), "out")
            if stage.kind == "addnorm"
            else names.ffn_entry(stage.layer, "hidden")
        )
        data = trace[name]  # [T, d] or [T, d_ff]
        return _table(
            "token \\ dim",
            _tokens(trace, names.stack_side(names.stack_of(stage.layer)), data.shape[0]),
            _numbered("dim ", data.shape[1]),
            data,
        )
    if stage.kind in (names.LOGITS, names.PROBS):
        data = trace[stage.kind]  # [T, vocab]
        side = "tgt" if names.side_entry("tgt", "tokens") in trace else "src"
        return _table(
            "position \\ token id", _tokens(trace, side, data.shape[0]), _numbered("id ", data.shape[1]), data
        )
    raise ValueError(f"the stage {stage.key!r} has no table of numbers to export")


def safe_file_stem(key: str) -> str:
    """A stage key as a file name stem: 'enc.0.self.weights' -> 'enc.0.self.weights' (only [A-Za-z0-9._-])."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._") or "stage"


@dataclass(frozen=True)
class HandoutEntry:
    """One rendered stage of a handout: its title, its explanation (HTML) and the files drawn for it."""

    title: str
    explanation_html: str
    files: Sequence[str]  # names relative to the handout's folder


def handout_html(heading: str, subtitle: str, entries: Sequence[HandoutEntry]) -> str:
    """index.html of a rendered handout: every stage in order with its picture(s) and explanation."""
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(heading)}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        "section{margin-bottom:3em;border-top:1px solid #ccc;padding-top:1em}"
        "img{max-width:100%;border:1px solid #eee}nav li{margin:.2em 0}</style></head><body>",
        f"<h1>{html.escape(heading)}</h1>",
        f"<p>{html.escape(subtitle)}</p>",
        "<nav><ol>",
    ]
    parts += [f"<li><a href='#s{i}'>{html.escape(e.title)}</a></li>" for i, e in enumerate(entries, 1)]
    parts.append("</ol></nav>")
    for i, entry in enumerate(entries, 1):
        parts.append(f"<section id='s{i}'><h2>{i}. {html.escape(entry.title)}</h2>")
        if entry.files:  # the first format as the picture, the others as links
            ref, alt = html.escape(entry.files[0], quote=True), html.escape(entry.title, quote=True)
            parts.append(f"<p><a href='{ref}'><img src='{ref}' alt='{alt}'></a></p>")
        others = [f"<a href='{html.escape(n, quote=True)}'>{html.escape(n)}</a>" for n in entry.files[1:]]
        if others:
            parts.append(f"<p>Also: {', '.join(others)}</p>")
        parts.append(f"<div class='explanation'>{entry.explanation_html}</div></section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
