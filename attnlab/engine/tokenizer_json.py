"""A tokenizer saved with `to_json()` read back, whichever kind it is: attnlab's own (engine/tokenizer.py) or a
model's (engine/hf_tokenizer.py). Above both, so that neither imports the other's module to read the JSON."""

from __future__ import annotations

from attnlab.engine.hf_tokenizer import FOREIGN_KINDS, foreign_tokenizer_from_json
from attnlab.engine.tokenizer import BPETokenizer, CharTokenizer, Tokenizer, WordTokenizer, guarded
from attnlab.limits import MAX_TOKENIZER_CHARS, excerpt, loads_bounded


def tokenizer_from_json(text: str) -> Tokenizer:
    """Rebuild a tokenizer saved with `to_json()`; raises ValueError with a readable message if it can't."""
    try:
        data = loads_bounded(text, "the tokenizer", MAX_TOKENIZER_CHARS)
    except ValueError as e:
        raise ValueError(str(e)) from e
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError("the tokenizer JSON has no 'kind' (expected 'bpe', 'word' or 'char')")
    kind = data["kind"]
    try:
        if kind in ("word", "char"):
            vocab = data["vocab"]
            if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
                raise ValueError("its vocab must be a list of strings")
            return (WordTokenizer if kind == "word" else CharTokenizer)(vocab)
        if kind == "bpe":
            from tokenizers import Tokenizer as HF

            hf = guarded(lambda: HF.from_str(data["hf"]), "read its JSON")
            return guarded(lambda: BPETokenizer(hf), "list its vocabulary")
        if kind in FOREIGN_KINDS:  # a model's own tokenizer (engine/hf_tokenizer.py)
            return foreign_tokenizer_from_json(data)
    except KeyError as e:
        raise ValueError(f"the {kind} tokenizer JSON lacks the field {e}") from e
    except Exception as e:  # the tokenizers library raises its own exception type
        raise ValueError(f"the {kind} tokenizer could not be read: {e}") from e
    raise ValueError(f"unknown tokenizer kind {excerpt(kind)} (expected 'bpe', 'word' or 'char')")
