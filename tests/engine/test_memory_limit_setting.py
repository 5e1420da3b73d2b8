"""ATTNLAB_MEMORY_LIMIT in the forms the README documents (issue 38.6): plain bytes, or a number with K, M, G, T
(powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024), an optional B; "8G" and "1.5G" were ignored without a word
before, and "²" (a digit to str.isdigit, not to int) was blamed on the checkpoint being read."""

from __future__ import annotations

import pytest

from attnlab.engine import memory
from attnlab.env_settings import SettingError, parse_bytes, torch_threads

NAME = "ATTNLAB_MEMORY_LIMIT"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8000000000", 8 * 10**9),
        ("8G", 8 * 10**9),
        ("8gb", 8 * 10**9),
        (" 1.5G ", 15 * 10**8),
        ("512M", 512 * 10**6),
        ("64K", 64_000),
        ("2T", 2 * 10**12),
        ("8GiB", 8 * 2**30),
        ("512Mi", 512 * 2**20),
        ("300000000", 300_000_000),
    ],
)
def test_the_documented_forms_are_read(value, expected):
    assert parse_bytes(NAME, value) == expected


@pytest.mark.parametrize("value", ["1e9", "-1", "²", "٣", "8X", "1.5", "0", "0G", "8 G B", "G", "0x10", "+8G", "inf"])
def test_anything_else_is_refused_naming_the_variable(value):
    with pytest.raises(SettingError) as refused:
        parse_bytes(NAME, value)
    message = str(refused.value)
    assert message.startswith(f"{NAME}={value!r} is ") and "\n" not in message
    assert "8G" in message  # the refusal shows a form that works


def test_the_limit_in_gigabytes_bounds_what_the_process_may_allocate(monkeypatch):
    monkeypatch.setenv(NAME, "8G")
    assert memory.set_limit_room() <= 8 * 10**9  # UNLIMITED before: the value was ignored
    monkeypatch.setenv(NAME, "1K")
    assert memory.host_available() == 0  # the process already holds more than a kilobyte


def test_a_malformed_limit_is_named_wherever_memory_is_asked_for(monkeypatch):
    monkeypatch.setenv(NAME, "²")
    with pytest.raises(SettingError, match=f"{NAME}='²' is not a number of bytes"):
        memory.host_available()


def test_torch_threads(monkeypatch):
    monkeypatch.setenv("ATTNLAB_TORCH_THREADS", "3")
    assert torch_threads() == 3
    for bad in ("0", "-2", "two", "³"):
        monkeypatch.setenv("ATTNLAB_TORCH_THREADS", bad)
        with pytest.raises(SettingError, match="ATTNLAB_TORCH_THREADS"):
            torch_threads()
