"""The ATTNLAB_* environment variables, read in one place: each malformed value is refused in one line naming the
variable and the forms it takes, never ignored without a word (issue 38.6). Plain Python: no torch, no Qt.

    ATTNLAB_MEMORY_LIMIT    bytes this process may hold in all: 8000000000, 8G, 8GB, 1.5G, 512M, 8GiB
    ATTNLAB_TORCH_THREADS   torch's intra-op threads: a whole number from 1
    ATTNLAB_DEBUG           1: a command's unexpected error shows its traceback (0 or unset: it does not)
    ATTNLAB_MALLOC_TUNING   0: leave glibc's allocator alone (1 or unset: tune it)
    ATTNLAB_SETTINGS        the .ini file the app keeps its settings in (a file, not a folder)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

MEMORY_LIMIT = "ATTNLAB_MEMORY_LIMIT"
TORCH_THREADS = "ATTNLAB_TORCH_THREADS"
DEBUG = "ATTNLAB_DEBUG"
MALLOC_TUNING = "ATTNLAB_MALLOC_TUNING"
SETTINGS = "ATTNLAB_SETTINGS"

# K, M, G, T are powers of 1000 (as the refusals write sizes: "6.4 GB"); Ki, Mi, Gi, Ti powers of 1024
UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
BYTES_FORMS = "a whole number of bytes, or a number with K, M, G or T (powers of 1000) or Ki, Mi, Gi, Ti (of 1024)"
_BYTES = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]i?)?b?\s*", re.IGNORECASE | re.ASCII)
MAX_SHOWN = 40  # characters of a malformed value quoted in the refusal


class SettingError(ValueError):
    """An ATTNLAB_* environment variable holds a value attnlab cannot read; the message names it in one line."""


def _shown(name: str, value: str) -> str:
    return f"{name}={value[:MAX_SHOWN]!r}" + ("…" if len(value) > MAX_SHOWN else "")


def parse_bytes(name: str, value: str) -> int:
    """`value` ("8000000000", "8G", "1.5GB", "512Mi") in bytes; SettingError naming `name` for anything else
    (an exponent, a sign, a digit of another script, zero)."""
    match = _BYTES.fullmatch(value)
    unit = (match.group(2) or "").lower() if match else ""
    if match is None or ("." in match.group(1) and not unit):
        raise SettingError(f"{_shown(name, value)} is not a number of bytes (e.g. 8000000000 or 8G): {BYTES_FORMS}")
    whole, _dot, fraction = match.group(1).partition(".")
    scale = UNITS[unit]
    n = int(whole) * scale + (int(fraction) * scale) // 10 ** len(fraction) if fraction else int(whole) * scale
    if n <= 0:
        raise SettingError(f"{_shown(name, value)} is no memory at all: give more than 0 bytes (e.g. 8G)")
    return n


def memory_limit(environ: Mapping[str, str] | None = None) -> int | None:
    """ATTNLAB_MEMORY_LIMIT in bytes (None when unset or empty)."""
    value = (os.environ if environ is None else environ).get(MEMORY_LIMIT, "")
    return parse_bytes(MEMORY_LIMIT, value) if value.strip() else None


def torch_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """ATTNLAB_TORCH_THREADS (None when unset or empty)."""
    value = (os.environ if environ is None else environ).get(TORCH_THREADS, "")
    if not value.strip():
        return None
    if not (value.strip().isascii() and value.strip().isdigit()) or int(value) < 1:
        raise SettingError(f"{_shown(TORCH_THREADS, value)} is not a number of threads (a whole number from 1, e.g. 4)")
    return int(value)


def switch(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """A 0/1 variable (ATTNLAB_DEBUG, ATTNLAB_MALLOC_TUNING): `default` when unset or empty."""
    value = (os.environ if environ is None else environ).get(name, "").strip()
    if not value:
        return default
    if value not in ("0", "1"):
        raise SettingError(f"{_shown(name, value)} is neither 0 nor 1")
    return value == "1"


def settings_path(environ: Mapping[str, str] | None = None) -> str | None:
    """ATTNLAB_SETTINGS (None when unset or empty): the settings file, refused when it names a folder."""
    value = (os.environ if environ is None else environ).get(SETTINGS, "")
    if not value:
        return None
    if os.path.isdir(value):
        raise SettingError(f"{_shown(SETTINGS, value)} is a folder; it names the settings file (e.g. ~/attnlab.ini)")
    return value


CHECKS: tuple[Callable[[Mapping[str, str]], object], ...] = (
    memory_limit,
    torch_threads,
    lambda env: switch(DEBUG, False, env),
    lambda env: switch(MALLOC_TUNING, True, env),
    settings_path,
)


def setting_problems(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every malformed ATTNLAB_* value, one line each (empty: all are readable); the commands refuse to start
    on any, before anything is loaded."""
    environ = os.environ if environ is None else environ
    problems = []
    for check in CHECKS:
        try:
            check(environ)
        except SettingError as e:
            problems.append(str(e))
    return problems
