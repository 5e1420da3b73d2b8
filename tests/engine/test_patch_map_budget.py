"""A patching map counted before it runs (issue 38): a row of the map never holds its cells' logits together
(positions × T × V floats for a residual row), and a patched run that cannot fit beside run B is refused in one
line before the first cell is computed."""

from __future__ import annotations

import weakref

import pytest

from attnlab.engine import output_budget, patch_sweep, replay
from attnlab.engine.memory import RunTooBig
from attnlab.engine.options import RunOptions
from attnlab.present import patching
from tests.support.tiny import build_tiny_model

A, B = "the black cat sees the dog", "the small dog sees the cat"  # the same number of words


def test_a_map_row_reads_one_patched_run_at_a_time(monkeypatch):
    model = build_tiny_model("decoder-only", seed=3)
    a, b = model.trace(A), model.trace(B)
    made = patching.new_map(a, b, "residual")
    alive_at_each_yield: list[int] = []
    real = patch_sweep.patched_logits

    def watched(*args, **kwargs):
        refs: list[weakref.ref] = []
        for logits in real(*args, **kwargs):
            alive_at_each_yield.append(sum(r() is not None for r in refs))  # earlier runs' logits still held
            refs.append(weakref.ref(logits))
            yield logits
            del logits

    monkeypatch.setattr(patch_sweep, "patched_logits", watched)
    cells = made.cells[1]
    diffs = patching.map_row(model, B, None, RunOptions(), cells, made.answer)
    assert len(diffs) == len(cells) == len(alive_at_each_yield) > 3
    # the reader's loop variable holds the last one until the next arrives; a list would hold 0, 1, 2, ... of them
    assert max(alive_at_each_yield) <= 1


def test_a_map_whose_runs_cannot_fit_is_refused_before_its_first_cell(monkeypatch):
    model = build_tiny_model("decoder-only", seed=3)
    a = model.trace(A)
    cells = patch_sweep.cells_of(a, "residual")[0]
    ran: list[object] = []
    real_run_of = replay.run_of
    monkeypatch.setattr(replay, "run_of", lambda *args: ran.append(args) or real_run_of(*args))
    monkeypatch.setattr(output_budget, "memory_room", lambda: 10)  # ten bytes: no [T, V] fits
    with pytest.raises(RunTooBig) as refused:
        next(patch_sweep.patched_logits(model, B, None, RunOptions(), cells))
    (line,) = str(refused.value).splitlines()
    V, T = model.config.out_vocab_size, len(a["tgt.tokens"])
    assert f"needs about {output_budget.amount(T * V * 4)} of memory, but only 10 bytes is available" in line
    assert line.endswith("no cell was computed") and len(ran) == 1  # run B's recorded run, no patched one
