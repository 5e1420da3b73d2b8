"""The input stages as plain data: the text cut into tokens (one chip per token), the token embeddings, and
the layer input (embedding + position [+ token type], then the embedding LayerNorm where the model has one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnlab.engine import names
from attnlab.engine.trace import Trace
from attnlab.present.chat_marks import CHAT_LEGEND, chip_origins
from attnlab.present.facts import SPECIAL_TOKENS, missing, missing_message, side_name, tokens
from attnlab.present.labels import printable_label
from attnlab.present.position_range import PositionWindow, first_of, read_rows, window_for, window_labels
from attnlab.present.stages import Stage, ViewState
from attnlab.present.views.model import MatrixView, MessageView, Note, matrix_view

SPECIAL_MEANING = {"<s>": "start", "</s>": "end", "<pad>": "padding", "<unk>": "unknown"}
POSITION_OFF_TITLE = "position off: + 0"
NOT_IN_RUN = "not in this run"


def chip_kind(piece: str) -> str:
    """How a token's chip is drawn: 'pad', 'unk', 'special' (dashed) or 'word'."""
    if piece == "<pad>":
        return "pad"
    if piece == "<unk>":
        return "unk"
    return "special" if piece in SPECIAL_TOKENS else "word"


@dataclass(frozen=True)
class Chip:
    position: int
    piece: str  # the token as the tokenizer wrote it
    printable: str  # the piece made visible (space marks and blanks as ␣, control characters escaped)
    token_id: int
    kind: str  # chip_kind
    origin: str = ""  # a conversation's token: "template", "role", "words" or "special" (present/chat_marks.py)


@dataclass(frozen=True)
class TokensView:
    title: str
    chips: tuple[Chip, ...]
    count: str  # "7 tokens: 6 from the text + 1 special (</s>)"
    legend: str

    kind = "tokens"

    @property
    def pieces(self) -> list[str]:
        return [chip.piece for chip in self.chips]

    @property
    def ids(self) -> list[int]:
        return [chip.token_id for chip in self.chips]


def tokens_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> TokensView | MessageView:
    side = stage.side or "src"
    tokens_name, ids_name = names.side_entry(side, "tokens"), names.side_entry(side, "ids")
    lost = missing(trace, [tokens_name, ids_name])
    if lost:
        return MessageView("tokens", missing_message("Tokenization", lost))
    pieces = [str(t) for t in trace[tokens_name]]
    ids = [int(i) for i in trace.numpy(ids_name)]  # [T]
    origins = chip_origins(trace, side, len(pieces)) or [""] * len(pieces)
    chips = tuple(
        Chip(i, p, printable_label(p), token_id, "special" if o == "special" else chip_kind(p), o)
        for i, (p, token_id, o) in enumerate(zip(pieces, ids, origins, strict=True))
    )
    specials = [c.piece for c in chips if c.kind == "special"]  # attnlab's own, or a chat template's
    added = ", ".join(dict.fromkeys(specials)) if specials else "none"
    from_text = len(pieces) - len(specials)
    meaning = ", ".join(f"{s} = {SPECIAL_MEANING[s]}" for s in dict.fromkeys(specials) if s in SPECIAL_MEANING)
    return TokensView(
        title=f"{side_name(side).capitalize()}: the text cut into tokens, each with its id",
        chips=chips,
        count=f"{len(pieces)} tokens: {from_text} from the text + {len(specials)} special ({added})",
        legend="Each chip: position (top), token piece, vocabulary id (bottom). "
        + (f"Dashed chips are special tokens: {meaning}." if meaning else "")
        + (f" {CHAT_LEGEND}" if any(origins) else ""),
    )


@dataclass(frozen=True)
class EmbedView:
    matrix: MatrixView  # [T, d]
    note: str

    kind = "embed"


EMBED_NOTE = (
    "Each row is the embedding-table row picked by that token's id: the same token "
    "always gets the same row, wherever it stands."
)


def embed_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> EmbedView | MessageView:
    side = stage.side or "src"
    name = names.side_entry(side, "embed")
    if name not in trace:
        return MessageView("embed", missing_message("The token embedding", [name]))
    window = window_for(trace, side, display.positions)
    x = read_rows(trace, name, window)  # [T, d]: only the window's rows
    total = window.total if window is not None else x.shape[0]
    title = f"{side_name(side)} embeddings · {total} tokens × {x.shape[1]} dimensions"
    title += _window_caption(window)
    labels = window_labels(tokens(trace, side, total), window)
    return EmbedView(matrix_view(name, x, labels, title, first_row=first_of(window)), EMBED_NOTE)


def _window_caption(window: PositionWindow | None) -> str:
    """' · positions 4,000–4,039 of 8,192' for a partial window, else nothing."""
    return "" if window is None or window.whole else f" · {window.caption()}"


@dataclass(frozen=True)
class InputSumView:
    """Three maps on one colour scale: what is embedded, what is added, and the layer input. A part the run
    lacks is a MatrixView with a message ("not in this run"); position off shows the zeros that are added."""

    embed: MatrixView  # [T, d]
    added: MatrixView  # [T, d]: position (+ token type); zeros when nothing is added
    input: MatrixView  # [T, d]
    operator: str  # "=" or "→ LayerNorm →" between the sum and the layer input
    note: Note
    embed_values: np.ndarray | None  # [T, d] the token embedding as recorded (None when not recorded)
    pos_values: np.ndarray | None  # [T, d] what is added: position (+ token type); None when nothing is
    token_type: np.ndarray | None  # [T, d] BERT-like segment embedding, None for the classroom models
    embed_norm: bool  # the embedding LayerNorm turns the sum into the layer input

    kind = "input"


def _added_part(
    trace: Trace, side: str, window: PositionWindow | None = None
) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """(position + token type, token type alone, the middle map's title), the window's rows."""
    pos_name, type_name = names.side_entry(side, "pos"), names.side_entry(side, names.TYPE)
    pos = read_rows(trace, pos_name, window) if pos_name in trace else None  # [T, d]
    if type_name not in trace:
        return pos, None, "positional encoding"
    token_type = read_rows(trace, type_name, window)  # [T, d]
    return (token_type if pos is None else pos + token_type), token_type, "position + token type"


def input_note(shape: tuple[int, ...], has_pos: bool, token_type: bool, embed_norm: bool) -> Note:
    """The sentence under the three maps; the positional toggle switches between the two classroom texts."""
    if token_type or embed_norm:
        parts = (
            "Token embedding + position + token type (segment: 0 for sentence A, 1 for sentence B)"
            if token_type
            else "Token embedding + position"
        )
        ending = (
            ", then the embedding LayerNorm: its output is what the first layer reads."
            if embed_norm
            else ": this sum is what the first layer reads."
        )
        return Note(parts + ending)
    with_pos = (
        f"Each token's vector is its embedding plus the encoding of its position "
        f"({shape[0]} × {shape[1]} each, one shared colour scale). This sum is "
        f"what the first layer reads."
    )
    without_pos = (
        "No positional table is added here, so the layer input equals the "
        "embedding: without position information, reordering the words changes "
        "nothing (unless rotary encoding adds position inside attention)."
    )
    return Note(with_pos if has_pos else without_pos, alternatives=(with_pos, without_pos))


def input_title(embed_norm: bool, factorised: bool) -> str:
    if factorised:
        return "LayerNorm(sum), then × W_proj (next stage)"
    return "LayerNorm(sum) = layer input" if embed_norm else "sum = layer input"


def input_sum_view(
    trace: Trace, stage: Stage, display: ViewState, vocab: Callable[[int], str] | None = None
) -> InputSumView | MessageView:
    side = stage.side or "src"
    name = names.side_entry(side, "input")
    if name not in trace:
        return MessageView("input", missing_message("The layer input", [name]))
    factorised = names.side_entry(side, names.EMBED_PROJ) in trace  # ALBERT, ELECTRA: the next stage widens it
    if factorised:  # this stage ends at the e-wide LayerNorm(sum); the layer input is the next stage's
        name = names.norm_entry(names.embed_norm(side), "out")
    window = window_for(trace, side, display.positions)
    x = read_rows(trace, name, window)  # [T, d] ([T, e] when factorised): only the window's rows
    labels = window_labels(tokens(trace, side, window.total if window is not None else x.shape[0]), window)
    embed_name = names.side_entry(side, "embed")
    embed = read_rows(trace, embed_name, window) if embed_name in trace else None  # [T, d]
    added, token_type, added_title = _added_part(trace, side, window)
    embed_norm = names.norm_entry(names.embed_norm(side), "out") in trace
    bound = max(float(np.abs(p).max()) for p in (embed, added, x) if p is not None and p.size) or 1.0
    levels = (-bound, bound)

    def shown(part: str, values: np.ndarray | None, title: str) -> MatrixView:
        if values is None:  # the box stays in place (no re-layout on the toggle) and says why it is empty
            return MatrixView(part, np.zeros((0, 0), np.float32), None, None, title, message=NOT_IN_RUN)
        return matrix_view(part, values, labels, title, levels=levels, symmetric=None, first_row=first_of(window))

    return InputSumView(
        embed=shown(embed_name, embed, "token embedding"),
        # nothing added: show the zeros and say so above them (swapping the map for a message re-lays out)
        added=shown(names.side_entry(side, "pos"), added, added_title)
        if added is not None
        else shown(names.side_entry(side, "pos"), np.zeros_like(x), POSITION_OFF_TITLE),
        input=shown(name, x, input_title(embed_norm, factorised)),
        operator="→ LayerNorm →" if embed_norm else "=",
        note=input_note(
            (window.total if window else x.shape[0], x.shape[1]), added is not None, token_type is not None, embed_norm
        ),
        embed_values=embed,
        pos_values=added,
        token_type=token_type,
        embed_norm=embed_norm,
    )
