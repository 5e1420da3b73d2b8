"""Read a small pickle that may only hold plain data: dicts, lists, tuples, strings, numbers, booleans, None.

nanoGPT writes its character vocabulary as meta.pkl ({"vocab_size", "itos", "stoi"}). Those values are built
by pickle opcodes that never import anything, so this unpickler refuses every import (find_class): a pickle
that tries to construct an object or call a function stops there, before anything runs. Before it runs, the
pickle is scanned with the limits of a .pt file's (pickle_scan: size, instructions, memo slots, nesting), so
a deeply nested key cannot overflow the C stack (hashing a tuple recurses without a guard).
"""

from __future__ import annotations

import io
import pickle
from typing import Any, NoReturn

from attnlab.checkpoints.pickle_scan import pickle_problem

MAX_BYTES = 50_000_000


class PlainDataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"it asks to import {module}.{name}, which plain data never needs")


def load_plain_pickle(data: bytes) -> Any:  # dicts, lists, tuples, strings, numbers, booleans, None
    """The object in `data`, or ValueError saying why it is refused (nothing in it has run)."""
    if len(data) > MAX_BYTES:
        raise ValueError(f"it is {len(data):,} bytes, more than a vocabulary file needs")
    refused = pickle_problem(io.BytesIO(data), "it")
    if refused:
        raise ValueError(f"refused: {refused}")
    try:
        return PlainDataOnly(io.BytesIO(data)).load()
    except pickle.UnpicklingError as e:
        raise ValueError(f"refused: {e}; only dicts, lists, strings and numbers are read") from e
    except RecursionError as e:
        raise ValueError("refused: it nests values too deeply to read") from e
    except MemoryError as e:
        raise ValueError("refused: reading it needs more memory than is available") from e
    except Exception as e:  # truncated or garbage streams raise assorted errors
        raise ValueError(f"it is not a readable pickle ({type(e).__name__}: {str(e)[:200]})") from e
