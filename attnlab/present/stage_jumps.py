"""Jumps through the stage list: layer / sub-layer starts and the stage search (what the presenter's shortcuts
and the search box use). Qt-free."""

from __future__ import annotations

from collections.abc import Callable

from attnlab.present.stage_types import MOE, OUTPUT, Stage


def sublayer_of(stage: Stage) -> str:
    """The block a stage belongs to: one attention site, one add & norm, one FFN, one side's input, the output."""
    if stage.site:
        return stage.site
    if stage.side:
        return f"{stage.side}.input"
    if stage.kind in ("addnorm", "ffn", MOE):
        return stage.key
    return OUTPUT


def _jump(stages: list[Stage], key: str | None, direction: int, block: Callable[[Stage], str]) -> str | None:
    """The key of the first stage of the next (direction > 0) or previous block. Backwards from the middle
    of a block goes to its own start first (like a text editor's Ctrl+←). None when there is nowhere to go."""
    if not stages:
        return None
    keys = [s.key for s in stages]
    i = keys.index(key) if key in keys else 0
    starts = [j for j, s in enumerate(stages) if j == 0 or block(s) != block(stages[j - 1])]
    if direction > 0:
        later = [j for j in starts if j > i]
        return keys[later[0]] if later else None
    earlier = [j for j in starts if j < i]
    return keys[earlier[-1]] if earlier else None


def layer_jump(stages: list[Stage], key: str | None, direction: int) -> str | None:
    """First stage of the next / previous group ("Encoder layer 2", "Decoder input", "Output")."""
    return _jump(stages, key, direction, lambda s: s.group)


def sublayer_jump(stages: list[Stage], key: str | None, direction: int) -> str | None:
    """First stage of the next / previous block (an attention site, an add & norm, an FFN, an input, the output)."""
    return _jump(stages, key, direction, sublayer_of)


def search_stages(stages: list[Stage], query: str) -> list[Stage]:
    """The stages whose group, title or key contain every word of `query` (case-insensitive), in order.
    An empty query matches every stage."""
    words = query.lower().split()
    found = []
    for stage in stages:
        text = f"{stage.group} {stage.title} {stage.key}".lower()
        if all(w in text for w in words):
            found.append(stage)
    return found
