"""The window's exports counted before they start (issue 38): a stage's numbers as CSV against the memory there
is (before its numbers are made), any text file against the free space of its folder, a PNG at its scale; each
refused in one line (RunTooBig, a ValueError: File → Export shows it), nothing written."""

from __future__ import annotations

from collections import namedtuple

import pytest

from attnlab.engine import output_budget
from attnlab.engine.memory import RunTooBig
from attnlab.present import export
from attnlab.present.stages import ViewState, stages_for

Usage = namedtuple("Usage", "total used free")  # what shutil.disk_usage returns


def test_a_csv_table_too_big_for_the_memory_is_refused_before_its_numbers_are_made(tiny_model, monkeypatch):
    trace = tiny_model().trace("the black cat sees the dog", "le chat noir")
    (logits,) = (s for s in stages_for(trace) if s.kind == "logits")
    T, V = trace["logits"].shape
    made: list[object] = []
    monkeypatch.setattr(export, "_matrix", lambda values: made.append(values) or [])
    monkeypatch.setattr(output_budget, "memory_room", lambda: T * V)  # a byte a number
    with pytest.raises(RunTooBig) as refused:
        export.stage_table(trace, logits, ViewState())
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"a table of {T:,} × {V:,} numbers needs about") and made == []
    monkeypatch.setattr(output_budget, "memory_room", lambda: T * V * export.CSV_BYTES_PER_CELL)
    export.stage_table(trace, logits, ViewState())
    assert len(made) == 1


def test_an_attention_table_reads_one_head(tiny_model):
    trace = tiny_model().trace("the black cat sees the dog", "le chat noir")
    stage = next(s for s in stages_for(trace) if s.key == "dec.1.self.weights")
    table = export.stage_table(trace, stage, ViewState(head=1))
    assert not trace.on_host("dec.1.self.weights")  # the other heads never came to the host
    assert table.values == trace["dec.1.self.weights"][1].tolist()


def test_a_text_file_larger_than_the_free_disk_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(output_budget.shutil, "disk_usage", lambda _folder: Usage(10**9, 10**9 - 99, 99))
    with pytest.raises(RunTooBig, match=r"has only 99 bytes free; nothing was written$") as refused:
        export.write_text(tmp_path / "answers.csv", "x" * 100)
    assert repr(str(tmp_path)) in str(refused.value) and not list(tmp_path.iterdir())
    assert export.write_text(tmp_path / "answers.csv", "x" * 99).read_text() == "x" * 99


def test_a_picture_too_big_for_the_memory_is_refused(monkeypatch):
    monkeypatch.setattr(output_budget, "memory_room", lambda: 1_000_000)
    with pytest.raises(RunTooBig, match=r"^a picture of 3000 × 1920 pixels needs about .* but only 1 MB"):
        export.check_picture(1000, 640, 3)
    export.check_picture(100, 100, 1)  # 80 kB fits
