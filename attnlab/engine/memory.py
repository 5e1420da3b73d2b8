"""How much memory this process can still use, and whether weights or a run fit, known before anything is
allocated (issue 23: no fixed parameter cap; never killed).

Host: /proc/meminfo's MemAvailable, lowered by a cgroup's memory.max (v2) or memory.limit_in_bytes (v1) and by
an address-space limit (RLIMIT_AS) when one is set. GPU: the driver's free memory plus what PyTorch's caching
allocator holds unused (budget.cuda_free_bytes). Each refusal is one line with the numbers. Qt-free.
"""

from __future__ import annotations

import resource
from pathlib import Path

import torch

from attnlab.engine.budget import cuda_free_bytes
from attnlab.env_settings import MEMORY_LIMIT, memory_limit
from attnlab.limits import gb

UNLIMITED = 1 << 62


class RunTooBig(ValueError):
    """A run or a model that cannot fit in the memory there is; the message says the numbers and what would
    make it fit."""


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def meminfo_available() -> int:
    """MemAvailable of /proc/meminfo in bytes (UNLIMITED where it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return UNLIMITED


def cgroup_room() -> int:
    """What this process's cgroup still allows (limit - usage), UNLIMITED without a limit."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return UNLIMITED
    room = UNLIMITED
    for line in lines:
        _id, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # cgroup v2
            base = Path("/sys/fs/cgroup") / path.lstrip("/")
            limit, used = _read_int(base / "memory.max"), _read_int(base / "memory.current")
        elif "memory" in controllers.split(","):
            base = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            limit, used = _read_int(base / "memory.limit_in_bytes"), _read_int(base / "memory.usage_in_bytes")
        else:
            continue
        if limit is not None and limit < UNLIMITED:
            room = min(room, max(limit - (used or 0), 0))
    return room


def address_space_room() -> int:
    """What RLIMIT_AS still allows beyond this process's current virtual size, UNLIMITED without a limit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return UNLIMITED
    try:
        status = Path("/proc/self/status").read_text()
        size = int(status.split("VmSize:")[1].split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return max(soft - size, 0)


LIMIT_VARIABLE = MEMORY_LIMIT  # bytes this process may hold in all: a limit a person (or a test) sets


def set_limit_room() -> int:
    """What ATTNLAB_MEMORY_LIMIT (bytes: 8000000000, 8G, 512M; env_settings.py) still allows beyond this process's
    resident size, UNLIMITED unset; a malformed value raises SettingError naming the variable."""
    limit = memory_limit()
    if limit is None:
        return UNLIMITED
    try:
        resident = int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        resident = 0
    return max(limit - resident, 0)


def host_available() -> int:
    """Bytes this process can still allocate on the host."""
    return min(meminfo_available(), cgroup_room(), address_space_room(), set_limit_room())


def available_on(device: torch.device) -> int:
    """Bytes free on `device` for this process (a GPU that cannot be queried: 0)."""
    if device.type == "cuda":
        try:
            return cuda_free_bytes(device)
        except (RuntimeError, AssertionError):  # a driver error; a torch built without CUDA asserts
            return 0
    return host_available()


def weights_refusal(n_values: int, dtype: torch.dtype, device: torch.device, available: int | None = None) -> str:
    """Why weights of `n_values` values in `dtype` cannot be held on `device` (empty: they fit)."""
    element = torch.empty((), dtype=dtype).element_size()
    need = n_values * element
    room = available_on(device) if available is None else available
    if need <= room:
        return ""
    where = "GPU memory" if device.type == "cuda" else "memory"
    hint = ""
    if element > 2:
        hint = f"; in bfloat16 it would need {gb(n_values * 2)} (dtype='bfloat16')"
    return (
        f"the weights need {gb(need)} in {str(dtype).removeprefix('torch.')} ({n_values:,} parameters), "
        f"but only {gb(room)} of {where} is available{hint}"
    )


_LIBC: list[object] = []  # glibc, once looked up ([None] where there is none)


def give_back_freed() -> None:
    """Hand the host memory freed inside the C allocator back to the system (glibc's malloc_trim; nothing
    elsewhere). PyTorch's CPU kernels allocate their temporaries on their worker threads, whose glibc arenas keep
    what they free: a loop of such work (the logit lens, 31 vocabulary projections for a 30-layer model; a
    trace written entry by entry) otherwise grows the resident size by tens of MB a step it does not use."""
    if not _LIBC:
        import ctypes
        import ctypes.util

        try:
            _LIBC.append(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _LIBC.append(None)
    trim = _LIBC[0]
    if callable(trim):
        trim(0)
