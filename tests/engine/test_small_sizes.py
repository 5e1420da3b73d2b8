"""Sizes in refusals read sensibly when they are small (issue 38.5): a run of a tiny model short of memory said
"needs about 0 MB … but only 0 MB"; it now says kilobytes (kB) or bytes, and each figure is the byte count it
stands for."""

from __future__ import annotations

import re

import pytest

from attnlab.engine import run_budget
from attnlab.engine.memory import RunTooBig
from attnlab.engine.options import RunOptions
from attnlab.limits import gb

UNITS = {"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def as_bytes(words: str) -> float:
    number, unit = words.split()
    return float(number) * UNITS[unit]


@pytest.mark.parametrize("n", [0, 7, 999, 1000, 1499, 420_000, 999_400, 999_600, 3_500_000, 99e6, 1.2e8, 6.4e9])
def test_a_size_is_written_in_the_unit_that_keeps_it_above_zero(n):
    words = gb(n)
    number, unit = words.split()
    last_digit = 10.0 ** -len(number.partition(".")[2]) * UNITS[unit]
    assert abs(as_bytes(words) - n) <= last_digit / 2 + 1e-6  # within its rounding
    assert n == 0 or not words.startswith("0 ")


def test_a_tiny_run_short_of_memory_names_kilobytes_not_zero_megabytes(tiny_model, monkeypatch):
    m = tiny_model(arch="decoder-only", max_len=64)
    text = "the black cat sees the small dog"
    n = len(m.trace(tgt=text)["tgt.tokens"])
    needs = run_budget.run_needs(m.config, RunOptions(), 0, n + 2, 4, 0).total
    assert needs < 1e6  # the case that read "0 MB"
    room = needs // 4
    monkeypatch.setattr(run_budget, "available_on", lambda _device: int(room / run_budget.HEADROOM) + 1)
    with pytest.raises(RunTooBig) as refused:
        m.trace(tgt=text + " the cat")
    message = str(refused.value)
    assert " 0 MB" not in message
    said = re.search(r"needs about (\S+ \S+) in .*but only (\S+ \S+) of memory", message)
    assert said is not None, message
    assert as_bytes(said[1]) == pytest.approx(needs, rel=0.01)
    assert 0 < as_bytes(said[2]) <= room * 1.05
