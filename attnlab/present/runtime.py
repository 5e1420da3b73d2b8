"""How the app sets up torch for its worker thread (Qt-free; torch is imported on first call)."""

from __future__ import annotations

import os

from attnlab.env_settings import torch_threads


def configure_torch() -> int:
    """Give torch one core fewer than the machine has (at least one, at most four), so the GUI thread keeps a
    core; ATTNLAB_TORCH_THREADS overrides. On a 2-core machine with any other load, two intra-op threads
    made a d=128 forward pass ~50× slower (their barrier spins against the other process)."""
    import torch

    threads = torch_threads() or max(1, min(4, (os.cpu_count() or 2) - 1))  # SettingError: a malformed value
    torch.set_num_threads(threads)
    return threads
