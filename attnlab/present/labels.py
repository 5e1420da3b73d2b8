"""Token text as people read it on screen, with no Qt: the space marks of byte-level and SentencePiece pieces
shown as ␣, control characters escaped, blank tokens made visible, long labels shortened: the one rule for every
axis, chip and bar label (ui/plots/matrix_data.py re-exports it), and the words of a cell's hover readout."""

from __future__ import annotations

from attnlab.present.facts import PREDICTS

MAX_LABEL_CHARS = 12
SPACE_MARK = "␣"
_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}
# How tokenizers spell whitespace inside a piece: GPT-2's byte-level BPE maps the space byte to Ġ (U+0120), the
# newline to Ċ (U+010A); SentencePiece (and attnlab's character tokenizer) writes ▁. (The tab's ĉ is left alone:
# it is also an Esperanto letter, often a piece of its own.)
_LEADING_SPACE = ("\u0120", "\u2581")
_WHITESPACE_PIECE = {"\u0120": " ", "\u2581": " ", "\u010a": "\n"}
# A cell's value in words, by the trace step of the matrix it is read from (present/views: MatrixView.name).
VALUE_WORDS = {
    "weights": "weight",
    "scores": "score",
    "scaled": "scaled score",
    "masked": "masked score",
    "capped": "capped score",
    "biased": "biased score",
    "mask": "mask",
}


def spaced_piece(piece: str) -> str:
    """A tokenizer piece with its space marks shown as ␣: 'Ġquick' and '▁quick' -> '␣quick', 'Ġ' -> '␣'; a piece
    that is only whitespace ('Ċ', 'ĠĠ') becomes the whitespace it stands for (escaped by printable_label). Only a
    leading mark is read as a space: a mark inside a word stays (Ġ is also a Maltese letter)."""
    if piece and all(ch in _WHITESPACE_PIECE for ch in piece):
        return "".join(_WHITESPACE_PIECE[ch] for ch in piece)
    marks = len(piece) - len(piece.lstrip("".join(_LEADING_SPACE)))
    return SPACE_MARK * marks + piece[marks:] if marks else piece


def printable_label(label: object) -> str:
    """Token text made visible: space marks as ␣ (spaced_piece), control characters escaped, empty / blank
    tokens shown as ␣. A decoder row's "input → predicted" label is read part by part."""
    s = str(label)
    if PREDICTS in s:
        return PREDICTS.join(printable_label(part) for part in s.split(PREDICTS, 1))
    s = spaced_piece(s)
    if any(ch in s for ch in _CONTROL_ESCAPES):
        s = "".join(_CONTROL_ESCAPES.get(ch, ch) for ch in s)
    if not s.strip():
        s = SPACE_MARK * max(1, len(s))
    return s


def elide_label(label: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """Printable label shortened to `max_chars` characters with a trailing '…'; a decoder row's
    "input → predicted" label keeps both tokens, each shortened on its own."""
    s = printable_label(label)
    if PREDICTS in s:
        return PREDICTS.join(elide_label(part, max_chars) for part in s.split(PREDICTS, 1))
    if len(s) > max_chars:
        s = s[: max(1, max_chars - 1)] + "…"
    return s


def axis_role(title: str) -> str:
    """What an axis's rows or columns are, from its title: 'query (decoder tokens)' -> 'query'."""
    return title.split(" (", 1)[0].strip()


def value_word(entry: str) -> str:
    """What a matrix's cells are, from its trace entry: 'dec.0.self.weights' -> 'weight' ('value' otherwise)."""
    return VALUE_WORDS.get(entry.rsplit(".", 1)[-1], "value")


def cell_readout(
    row: tuple[int, str | None], col: tuple[int, str | None], value: str, roles: tuple[str, str, str] = ("", "", "")
) -> str:
    """The hover readout of one cell, naming what each part is: 'query ␣sentence (408), predicting . · key
    ␣and (179) · weight 0.31'. `row`/`col`: (index, token label or None), `roles`: what the rows, columns and
    values are ('' : row, column, value)."""
    row_role, col_role, value_role = (r or d for r, d in zip(roles, ("row", "column", "value"), strict=True))
    return f"{_part(row_role, *row)} · {_part(col_role, *col)} · {value_role} {value}"


def _part(role: str, index: int, label: str | None) -> str:
    if label is None:
        return f"{role} {index}"
    token, _, predicted = printable_label(label).partition(PREDICTS)
    return f"{role} {token} ({index})" + (f", predicting {predicted}" if predicted else "")
