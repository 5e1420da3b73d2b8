"""What names a model by its Hugging Face id rather than by a path: 'org/name' or 'org/name@revision' that is
not an existing path (a path that exists is always a path). Plain Python, importing neither torch nor
huggingface_hub, so the window can tell an id from a path on the GUI thread; checkpoints/hf_cache.py
validates the id (huggingface_hub's own rules) and finds it in the cache."""

from __future__ import annotations

import os
import re
from pathlib import Path

ID_PATTERN = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(@[\w./-]+)?")  # org/name[@revision]


def looks_like_id(spec: object) -> bool:
    """Whether `spec` (a str: a Path is always a path) is written as a model id and is no existing path."""
    if not isinstance(spec, str) or not ID_PATTERN.fullmatch(spec):
        return False
    return not os.path.lexists(Path(spec).expanduser())
