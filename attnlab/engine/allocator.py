"""The process's memory allocator, tuned for recorded runs (glibc only)."""

from __future__ import annotations

import ctypes
import platform

from attnlab.env_settings import MALLOC_TUNING, SettingError, switch

_freed_memory_kept = False


def _tuning_wanted() -> bool:
    """ATTNLAB_MALLOC_TUNING: 1 or unset tunes; a malformed value tunes too (the commands refuse it at start)."""
    try:
        return switch(MALLOC_TUNING, True)
    except SettingError:
        return True


def keep_freed_memory() -> None:
    """Ask glibc to keep freed memory for reuse instead of returning it to the OS straight away.

    A recorded run keeps every intermediate alive (tens of MB for a 6+6-layer model). With glibc's defaults
    that memory goes back to the OS when the previous trace is dropped and is faulted back in, page by page,
    during the next run, which on a small machine costs more than the arithmetic. After this, allocations up
    to 32 MB come from the heap and up to 256 MB of freed heap stays with the process. Process-wide; once;
    Linux/glibc only. Set ATTNLAB_MALLOC_TUNING=0 to leave the allocator alone.
    """
    global _freed_memory_kept
    if _freed_memory_kept:
        return
    _freed_memory_kept = True
    if not _tuning_wanted() or platform.libc_ver()[0] != "glibc":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    libc.mallopt(m_mmap_threshold, 32 << 20)
    libc.mallopt(m_trim_threshold, 256 << 20)
