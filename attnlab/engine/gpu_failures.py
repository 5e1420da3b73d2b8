"""The sizes at which the GPU ran out of memory, remembered (issue 23): after a run fell back to the CPU, a run
at least as long, of the same kind, goes to the CPU at once instead of failing on the GPU again (a failed
attempt costs its time, and fragments the GPU's memory). Per LiveModel, for as long as it is open. Qt-free.
"""

from __future__ import annotations

import torch

from attnlab.engine.options import RunOptions

FELL_BACK = "The GPU ran out of memory; this run was computed on the CPU instead."


class KnownTooLong(torch.cuda.OutOfMemoryError):
    """Raised before a GPU run as long as one that ran out of memory there: LiveModel.trace sends it to the
    CPU as it does a real out-of-memory error."""


def kind_of(options: RunOptions) -> tuple[bool, str]:
    """What a failure's size is remembered for: recorded or fast runs, in which precision."""
    return options.record, options.precision


class GpuFailures:
    """kind -> the (S, T) lengths that ran out of GPU memory (none of them at least as long as another)."""

    def __init__(self) -> None:
        self._failed: dict[tuple[bool, str], list[tuple[int, int]]] = {}

    def _covering(self, options: RunOptions, lengths: tuple[int, int]) -> tuple[int, int] | None:
        """A failed size that `lengths` (source, decoder input) is at least as long as on both sides."""
        return next(
            (f for f in self._failed.get(kind_of(options), []) if lengths[0] >= f[0] and lengths[1] >= f[1]), None
        )

    def check(self, options: RunOptions, lengths: tuple[int, int]) -> None:
        """KnownTooLong when a run of `lengths` is at least as long as one of the same kind that failed."""
        failed = self._covering(options, lengths)
        if failed is not None:
            raise KnownTooLong(f"a run of {max(failed):,} tokens ran out of GPU memory before")

    def failed(self, options: RunOptions, lengths: tuple[int, int]) -> str:
        """Remember that a run of `lengths` had no room on the GPU; the notice its CPU run carries."""
        known = self._covering(options, lengths)
        if known is not None:
            return (
                f"Runs of {max(known):,} tokens or more ran out of GPU memory before; this one "
                f"({max(lengths):,} tokens) was computed on the CPU."
            )
        kept = [f for f in self._failed.get(kind_of(options), []) if not (f[0] >= lengths[0] and f[1] >= lengths[1])]
        self._failed[kind_of(options)] = kept + [lengths]
        return FELL_BACK
