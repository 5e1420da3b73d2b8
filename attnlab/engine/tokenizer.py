"""Tokenizers: text -> token strings (what the UI shows) -> ids, and back.

Three kinds share one small interface: BPE (through the `tokenizers` library), word-level and
character-level (for teaching). Any text tokenizes: unknown pieces become <unk>, control characters are
dropped, nothing raises on odd input. Special tokens are always ids 0-3 here; the tokenizers of imported
models (engine/hf_tokenizer.py) keep theirs where the model has them; a tokenizer saved with `to_json()` is read
back by engine/tokenizer_json.py, which knows both.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from attnlab.engine.specials import ATTNLAB_SPECIALS

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
_WORD_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)

T = TypeVar("T")


def clean_text(text: str) -> str:
    """Drop control/format characters (keeping whitespace), normalise to NFC, collapse whitespace."""
    text = unicodedata.normalize("NFC", str(text))
    kept = (" " if ch.isspace() else ch for ch in text if ch.isspace() or unicodedata.category(ch)[0] != "C")
    return " ".join("".join(kept).split())


class Tokenizer:
    """Base: a vocabulary list whose first four entries are the special tokens."""

    kind = "base"

    def __init__(self, vocab: list[str]):
        if list(vocab[:4]) != list(SPECIALS):
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        self.vocab = list(vocab)
        self._index = {tok: i for i, tok in enumerate(self.vocab)}

    # the ids of SPECIALS (read-only, as the tokenizers of imported models read theirs from `specials`)
    @property
    def pad_id(self) -> int:
        return 0

    @property
    def bos_id(self) -> int:
        return 1

    @property
    def eos_id(self) -> int:
        return 2

    @property
    def unk_id(self) -> int:
        return 3

    specials = ATTNLAB_SPECIALS  # how LiveModel wraps each side (engine/specials.py)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def tokenize(self, text: str) -> list[str]:
        """Token strings as the model sees them (unknown pieces already replaced by <unk>)."""
        return self.encode(text)[0]

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        pieces = self._split(clean_text(text))
        ids = [self._index.get(p, self.unk_id) for p in pieces]
        return [p if i != self.unk_id else UNK for p, i in zip(pieces, ids, strict=True)], ids

    def id_to_token(self, i: int) -> str:
        return self.vocab[i] if 0 <= i < len(self.vocab) else UNK

    def decode(self, ids: Iterable[int]) -> str:
        toks = [self.id_to_token(int(i)) for i in ids if int(i) not in (self.pad_id, self.bos_id, self.eos_id)]
        return self._join(toks)

    def _split(self, text: str) -> list[str]:
        raise NotImplementedError

    def _join(self, tokens: list[str]) -> str:
        raise NotImplementedError

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "vocab": self.vocab}, ensure_ascii=False)


class WordTokenizer(Tokenizer):
    """Words and punctuation marks, lower-cased."""

    kind = "word"

    def _split(self, text: str) -> list[str]:
        return _WORD_RE.findall(text.lower())

    def _join(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    @classmethod
    def train(cls, texts: Iterable[str], max_size: int = 10000) -> WordTokenizer:
        counts: dict[str, int] = {}
        for t in texts:
            for w in _WORD_RE.findall(clean_text(t).lower()):
                counts[w] = counts.get(w, 0) + 1
        words = sorted(counts, key=lambda w: (-counts[w], w))[: max_size - len(SPECIALS)]
        return cls(list(SPECIALS) + words)


class CharTokenizer(Tokenizer):
    """One token per character; spaces shown as '▁'."""

    kind = "char"

    def _split(self, text: str) -> list[str]:
        return ["▁" if ch == " " else ch for ch in text]

    def _join(self, tokens: list[str]) -> str:
        return "".join(" " if t == "▁" else t for t in tokens)

    @classmethod
    def train(cls, texts: Iterable[str]) -> CharTokenizer:
        chars = sorted({("▁" if c == " " else c) for t in texts for c in clean_text(t)})
        return cls(list(SPECIALS) + chars)


class BPETokenizer(Tokenizer):
    """Byte-pair encoding via the `tokenizers` library. A word's continuation pieces start with '##'
    ("cats" -> "cat", "##s"); characters never seen in training fuse into one <unk>."""

    kind = "bpe"

    def __init__(self, hf_tokenizer: Any):  # a tokenizers.Tokenizer
        self.hf = hf_tokenizer
        vocab = [""] * hf_tokenizer.get_vocab_size()
        for tok, i in hf_tokenizer.get_vocab().items():
            vocab[i] = tok
        super().__init__(vocab)

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        return encode_hf(self, clean_text(text))

    def decode(self, ids: Iterable[int]) -> str:
        keep = [int(i) for i in ids if int(i) not in (self.pad_id, self.bos_id, self.eos_id)]
        return decode_hf(self, keep, {})

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "hf": self.hf.to_str()}, ensure_ascii=False)

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 2000) -> BPETokenizer:
        from tokenizers import Tokenizer as HF
        from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

        hf = HF(models.BPE(unk_token=UNK, continuing_subword_prefix="##", fuse_unk=True))
        hf.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
        hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
        hf.decoder = decoders.WordPiece(prefix="##")
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=list(SPECIALS), continuing_subword_prefix="##", show_progress=False
        )
        hf.train_from_iterator((clean_text(t) for t in texts), trainer=trainer)
        return cls(hf)


class TokenizerError(ValueError):
    """The tokenizer failed (for a Hugging Face tokenizer: even a Rust panic); the message says so plainly."""


def guarded(call: Callable[[], T], doing: str) -> T:
    """call(), with any failure of the tokenizers library as a TokenizerError. A panic inside the Rust code
    (e.g. a checkpoint's pathological regex) arrives as pyo3_runtime.PanicException, a BaseException that
    `except Exception` does not catch."""
    try:
        return call()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        reason = (str(e).splitlines() or [type(e).__name__])[0][:200]
        raise TokenizerError(
            f"the tokenizer failed to {doing} ({reason}); this checkpoint's tokenizer is broken for such input"
        ) from e


def decode_hf(owner: Any, ids: list[int], options: dict[str, Any]) -> str:
    """`owner.hf.decode(ids, **options)` (owner: a tokenizer around a Hugging Face one), refused in one line
    when the tokenizer's decoder could make too much text of these tokens (a `Replace` decoder multiplies text
    as a normalizer can: engine/tokenizer_bounds.py)."""
    from attnlab.engine.tokenizer_bounds import too_long_decoded

    refusal = too_long_decoded(owner.hf, sum(len(owner.id_to_token(i)) for i in ids))
    if refusal:
        raise TokenizerError(refusal)
    return str(guarded(lambda: owner.hf.decode(ids, **options), "turn these ids back into text"))


def encode_hf(owner: Any, text: str) -> tuple[list[str], list[int]]:
    """(tokens, ids) of `owner.hf.encode(text)` without special tokens (owner: a tokenizer around a Hugging Face
    one): in-process when no time limit is set on this thread and the tokenizer cannot make too much of this
    text (engine/tokenizer_bounds.py), else in a child process under a time limit and a memory cap
    (engine/tokenizer_process.py). Any failure, and more than MAX_PIECES_PER_CHAR pieces per character, is a
    one-line TokenizerError."""
    from attnlab.engine import tokenizer_process as child
    from attnlab.engine.tokenizer_bounds import safe_in_process, too_many_pieces

    in_process = child.encode_timeout() is None and safe_in_process(owner.hf, len(text))
    if in_process or not child.can_isolate():
        enc = guarded(lambda: owner.hf.encode(text, add_special_tokens=False), "split this text")
        tokens, ids = list(enc.tokens), list(enc.ids)
    else:
        tokens, ids = _encode_in_child(owner, text)
    refusal = too_many_pieces(len(ids), len(text))
    if refusal:
        raise TokenizerError(refusal)
    return tokens, ids


def _encode_in_child(owner: Any, text: str) -> tuple[list[str], list[int]]:
    """encode_hf's child-process side: each way the child can fail, in one line."""
    from attnlab.engine import tokenizer_process as child
    from attnlab.engine.tokenizer_bounds import too_many_pieces

    try:
        return child.encode_isolated(owner, text)
    except child.EncodeTimeout:
        limit = child.encode_timeout() or child.DEFAULT_TIMEOUT_S
        raise TokenizerError(
            f"the tokenizer took longer than {limit:g} s to split this text and was stopped; this checkpoint's "
            "tokenizer is too slow for such input"
        ) from None
    except child.TooManyPieces as e:
        raise TokenizerError(too_many_pieces(int(e.args[0]), len(text), str(e.args[1]))) from None
    except child.OutOfMemory:
        raise TokenizerError(
            f"the tokenizer needed more than {child.TOKENIZER_MEMORY_CAP / (1 << 30):g} GB of memory to split this "
            "text and was stopped; this checkpoint's tokenizer multiplies text"
        ) from None
    except RuntimeError as e:
        raise TokenizerError(
            f"the tokenizer failed to split this text ({e}); this checkpoint's tokenizer is broken for such input"
        ) from None
