"""The tokenizers of models attnlab did not train: a model's own tokenizer, with its own special tokens.

Same small interface as engine/tokenizer.py's Tokenizer (encode -> (pieces, ids), id_to_token, decode,
vocab_size, specials, to_json), but the text is passed on untouched (no cleaning: the ids must be exactly the
model's) and the special tokens are wherever the model keeps them (`specials`, engine/specials.py).

  LibraryTokenizer   anything the `tokenizers` library runs: tokenizer.json, GPT-2 vocab.json + merges.txt,
                     BERT vocab.txt (the builders are in checkpoints/tokenizer_files.py)
  SentencePieceTokenizer  Marian's source.spm / target.spm with the shared vocab.json (needs `sentencepiece`)
  SentencePieceModelTokenizer  a folder's only tokenizer file is a SentencePiece model: tokenizer.model
                     (Llama), spiece.model (T5), sentencepiece.bpe.model (XLM-R, numbered the fairseq way)
  CharVocabTokenizer one token per character from a nanoGPT meta.pkl (stoi / itos)
  NumberTokenizer    no vocabulary at all: tokens are shown as #0, #1, …; typing "#17 #4" feeds those ids
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any

from attnlab.engine.specials import Specials, specials_from_dict
from attnlab.engine.tokenizer import Tokenizer, decode_hf, encode_hf

SENTENCEPIECE_MISSING = (
    'This model\'s tokenizer needs the sentencepiece package. Install it with: pip install "attnlab[hf]"'
)


class ForeignTokenizer(Tokenizer):
    """Base of the tokenizers below: no fixed ids 0-3; `specials` says where the special tokens are."""

    kind = "foreign"

    def __init__(self, vocab: list[str], specials: Specials):
        self.vocab = list(vocab)
        self._index = {tok: i for i, tok in enumerate(self.vocab)}
        self.specials = specials

    # the attribute names attnlab's training and evaluation code reads
    @property
    def pad_id(self) -> int:
        return self.specials.pad_id

    @property
    def bos_id(self) -> int:
        return self.specials.start_id if self.specials.start_id is not None else self.specials.pad_id

    @property
    def eos_id(self) -> int:
        return self.specials.eos if self.specials.eos is not None else -1

    @property
    def unk_id(self) -> int:
        return self.specials.unk if self.specials.unk is not None else -1

    def id_to_token(self, i: int) -> str:
        return self.vocab[i] if 0 <= i < len(self.vocab) else f"#{i}"

    def token_id(self, token: str) -> int | None:
        return self._index.get(token)

    def decode(self, ids: Iterable[int]) -> str:
        hidden = self.specials.hidden_ids()
        return self._join([self.id_to_token(int(i)) for i in ids if int(i) not in hidden])

    def _join(self, tokens: list[str]) -> str:
        return "".join(tokens)


class LibraryTokenizer(ForeignTokenizer):
    """A `tokenizers.Tokenizer` run without its own post-processing (LiveModel wraps the specials)."""

    kind = "hf"

    def __init__(self, hf_tokenizer: Any, specials: Specials):  # a tokenizers.Tokenizer
        self.hf = hf_tokenizer
        size = hf_tokenizer.get_vocab_size(with_added_tokens=True)
        vocab = [f"#{i}" for i in range(size)]
        for tok, i in hf_tokenizer.get_vocab(with_added_tokens=True).items():
            if 0 <= i < size:
                vocab[i] = tok
        super().__init__(vocab, specials)

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        return encode_hf(self, str(text))

    def decode(self, ids: Iterable[int]) -> str:
        hidden = self.specials.hidden_ids()
        kept = [int(i) for i in ids if int(i) not in hidden]
        return decode_hf(self, kept, {"skip_special_tokens": False})

    def to_json(self) -> str:
        return json.dumps(
            {"kind": self.kind, "hf": self.hf.to_str(), "specials": self.specials.to_dict()}, ensure_ascii=False
        )


def load_sentencepiece(model_bytes: bytes) -> Any:  # a sentencepiece.SentencePieceProcessor
    try:
        import sentencepiece
    except ImportError as e:
        raise ImportError(SENTENCEPIECE_MISSING) from e
    sp = sentencepiece.SentencePieceProcessor()
    sp.LoadFromSerializedProto(model_bytes)
    return sp


class SentencePieceTokenizer(ForeignTokenizer):
    """Marian's scheme: SentencePiece splits the text into pieces, a separate vocab.json numbers them (pieces
    missing from it become <unk>). A leading language code such as >>fr<< is kept as one token."""

    kind = "spm"
    _LANGUAGE_CODE = re.compile(r"^\s*(>>[^<>]+<<)\s*")

    def __init__(self, model_bytes: bytes, vocab: dict[str, int], specials: Specials):
        self.sp = load_sentencepiece(model_bytes)
        self.model_bytes = model_bytes
        self.piece_ids = dict(vocab)
        ordered = [f"#{i}" for i in range(max(vocab.values(), default=-1) + 1)]
        for piece, i in vocab.items():
            ordered[i] = piece
        super().__init__(ordered, specials)

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        text = str(text)
        pieces: list[str] = []
        code = self._LANGUAGE_CODE.match(text)
        if code:
            pieces.append(code.group(1))
            text = text[code.end() :]
        pieces += self.sp.encode(text, out_type=str) if text else []
        unk = self.specials.unk
        ids = [self.piece_ids.get(p, unk if unk is not None else 0) for p in pieces]
        return [p if p in self.piece_ids else self.id_to_token(i) for p, i in zip(pieces, ids, strict=True)], ids

    def decode(self, ids: Iterable[int]) -> str:
        hidden = self.specials.hidden_ids()
        return self.sp.decode_pieces([self.id_to_token(int(i)) for i in ids if int(i) not in hidden])

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": self.kind,
                "model": base64.b64encode(self.model_bytes).decode("ascii"),
                "vocab": self.piece_ids,
                "specials": self.specials.to_dict(),
            },
            ensure_ascii=False,
        )


FAIRSEQ_FIRST = ("<s>", "<pad>", "</s>", "<unk>")  # XLM-R / CamemBERT ids 0-3; the model's pieces follow, +1


class SentencePieceModelTokenizer(ForeignTokenizer):
    """A SentencePiece model read as transformers reads it: the model's own ids (or, `fairseq`, XLM-R's: ids
    0-3 are <s> <pad> </s> <unk>, every other piece one higher than in the model, <mask> last); special tokens
    typed in the text stay one token each, as the library's added tokens do."""

    kind = "spm-model"

    def __init__(self, model_bytes: bytes, specials: Specials, fairseq: bool = False):
        self.sp = load_sentencepiece(model_bytes)
        self.model_bytes, self.fairseq = model_bytes, fairseq
        pieces = [self.sp.id_to_piece(i) for i in range(self.sp.get_piece_size())]
        super().__init__([*FAIRSEQ_FIRST, *pieces[3:], "<mask>"] if fairseq else pieces, specials)
        self._typed: re.Pattern[str] | None = None

    def _model_id(self, sp_id: int) -> int:
        if not self.fairseq:
            return sp_id
        return sp_id + 1 if sp_id >= 3 else self._index.get(self.sp.id_to_piece(sp_id), FAIRSEQ_FIRST.index("<unk>"))

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        if self._typed is None:  # the special tokens' texts, longest first
            typed = sorted({self.id_to_token(i) for i in self.specials.to_ids()}, key=len, reverse=True)
            self._typed = re.compile("(" + "|".join(map(re.escape, typed)) + ")") if typed else re.compile("(?!)")
        ids: list[int] = []
        for i, part in enumerate(self._typed.split(str(text))):
            if i % 2:
                ids.append(self._index[part])
            elif part:
                ids += [self._model_id(j) for j in self.sp.encode(part)]
        return [self.id_to_token(i) for i in ids], ids

    def decode(self, ids: Iterable[int]) -> str:
        hidden = self.specials.hidden_ids()
        return self.sp.decode_pieces([self.id_to_token(int(i)) for i in ids if int(i) not in hidden])

    def to_json(self) -> str:
        model = base64.b64encode(self.model_bytes).decode("ascii")
        data = {"kind": self.kind, "model": model, "fairseq": self.fairseq, "specials": self.specials.to_dict()}
        return json.dumps(data, ensure_ascii=False)


class CharVocabTokenizer(ForeignTokenizer):
    """One token per character (nanoGPT's shakespeare_char meta.pkl). Characters outside the vocabulary are
    left out (the model has no <unk>); `last_dropped` says which."""

    kind = "char-vocab"

    def __init__(self, chars: list[str]):
        super().__init__(chars, Specials(description="characters, no special tokens"))
        self.last_dropped: list[str] = []

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        kept = [ch for ch in str(text) if ch in self._index]
        self.last_dropped = [ch for ch in str(text) if ch not in self._index]
        return kept, [self._index[ch] for ch in kept]

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "vocab": self.vocab}, ensure_ascii=False)


class NumberTokenizer(ForeignTokenizer):
    """No vocabulary: token i is shown as "#i"; text is read as such numbers ("#17 #4" or "17 4")."""

    kind = "numbers"

    def __init__(self, vocab_size: int):
        super().__init__(
            [f"#{i}" for i in range(vocab_size)], Specials(description="no tokenizer: token ids shown as numbers")
        )

    def encode(self, text: str) -> tuple[list[str], list[int]]:
        ids = [int(n) for n in re.findall(r"#?(\d+)", str(text)) if int(n) < self.vocab_size]
        return [f"#{i}" for i in ids], ids

    def _join(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    def to_json(self) -> str:
        return json.dumps({"kind": self.kind, "vocab_size": self.vocab_size})


def foreign_tokenizer_from_json(data: dict[str, Any]) -> Tokenizer:
    """Rebuild one of these tokenizers from its `to_json()` dict (KeyError on a missing field)."""
    kind = data["kind"]
    if kind == "hf":
        from tokenizers import Tokenizer as HF

        return LibraryTokenizer(HF.from_str(data["hf"]), specials_from_dict(data["specials"]))
    if kind == "spm":
        return SentencePieceTokenizer(
            base64.b64decode(data["model"]), data["vocab"], specials_from_dict(data["specials"])
        )
    if kind == "spm-model":
        return SentencePieceModelTokenizer(
            base64.b64decode(data["model"]), specials_from_dict(data["specials"]), bool(data.get("fairseq"))
        )
    if kind == "char-vocab":
        return CharVocabTokenizer(list(data["vocab"]))
    if kind == "numbers":
        return NumberTokenizer(int(data["vocab_size"]))
    raise ValueError(f"unknown tokenizer kind {kind!r}")


FOREIGN_KINDS = ("hf", "spm", "spm-model", "char-vocab", "numbers")
