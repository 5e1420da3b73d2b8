"""A model folder's chat template: `chat_template.jinja` (which transformers prefers), else tokenizer_config.json's
`chat_template` (a string, or a list of named templates: the "default" one), and the named special tokens a
template reads (`bos_token`, `eos_token`, ...: the strings tokenizer_config.json / special_tokens_map.json give,
as transformers passes them). Kept in the model's metadata as "chat_template", "chat_template_names" and
"chat_specials" (engine/chat_prompt.py reads them; a GGUF file's template comes from checkpoints/gguf_file.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attnlab.bounded_read import MAX_SMALL_JSON_BYTES, FileRefused, confined, regular_file_size
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_files import read_json_file, token_text
from attnlab.engine.chat_prompt import SPECIAL_NAMES
from attnlab.engine.chat_template import chosen_template

TEMPLATE_FILE = "chat_template.jinja"


def _template_file(folder: Path, problems: Problems) -> str | None:
    if not os.path.lexists(folder / TEMPLATE_FILE):
        return None
    try:
        path = confined(folder, TEMPLATE_FILE, TEMPLATE_FILE)
        regular_file_size(path, TEMPLATE_FILE, MAX_SMALL_JSON_BYTES)
        return path.read_text(encoding="utf-8", errors="replace")
    except (FileRefused, OSError) as e:
        problems.add(f"{TEMPLATE_FILE}: {e}")
        return None


def chat_metadata(folder: Path, problems: Problems) -> dict[str, Any]:
    """{"chat_template": text, "chat_template_names": [...], "chat_specials": {...}} ({} without a template)."""
    tok_config = read_json_file(folder / "tokenizer_config.json", problems)
    value = tok_config.get("chat_template")
    template = _template_file(folder, problems) or chosen_template(value)
    if template is None:
        return {}
    special_map = read_json_file(folder / "special_tokens_map.json", problems)
    named = {}
    for name in SPECIAL_NAMES:
        text = token_text(tok_config.get(f"{name}_token")) or token_text(special_map.get(f"{name}_token"))
        if text is not None:
            named[f"{name}_token"] = text
    names = [t.get("name") for t in value if isinstance(t, dict)] if isinstance(value, list) else []
    return {"chat_template": template, "chat_template_names": [str(n) for n in names], "chat_specials": named}
