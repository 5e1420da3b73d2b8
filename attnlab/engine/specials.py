"""Special tokens and how each side of a model's input is wrapped in them.

A tokenizer carries one `Specials`: the ids of its special tokens (whatever ids the model uses, not
necessarily 0-3) and the wrapping rule for each role a token sequence can play:

  "encoder"       the source of an encoder-decoder model   attnlab: pieces </s>      Marian: pieces </s>
  "encoder-only"  the input of an encoder-only model        attnlab: <s> pieces </s>  BERT: [CLS] pieces [SEP]
  "decoder"       a decoder's input (or a decoder-only       attnlab: <s> pieces       GPT-2: pieces
                  model's prompt)                                                      Marian: <pad> pieces

A tokenizer that reads sentence pairs (BERT, RoBERTa) also has `pair`: the ids around and between the two
sentences, and the token type (segment) of each part, as its post-processor's "pair" template says
(BERT: [CLS]:0 A:0 [SEP]:0 B:1 [SEP]:1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROLES = ("encoder", "encoder-only", "decoder")
PAIR_PARTS = ("prefix", "a", "middle", "b", "suffix")  # the order of a sentence pair's parts


@dataclass(frozen=True)
class Specials:
    """Special-token ids (None where the model has no such token) and the wrapping per role.

    `prefix[role]` / `suffix[role]` are lists of token ids put before / after the pieces."""

    pad: int | None = None
    bos: int | None = None
    eos: int | None = None
    unk: int | None = None
    cls: int | None = None
    sep: int | None = None
    mask: int | None = None
    prefix: dict[str, list[int]] = field(default_factory=dict)
    suffix: dict[str, list[int]] = field(default_factory=dict)
    description: str = ""  # e.g. "[CLS] … [SEP]", shown in the model-info view
    # the encoder-only role's sentence-pair template: PAIR_PARTS -> ids, and each part's token type
    pair: dict[str, list[int]] = field(default_factory=dict)

    def wrap(self, role: str, ids: list[int]) -> list[int]:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        return list(self.prefix.get(role, [])) + list(ids) + list(self.suffix.get(role, []))

    def n_added(self, role: str) -> int:
        return len(self.prefix.get(role, [])) + len(self.suffix.get(role, []))

    @property
    def reads_pairs(self) -> bool:
        return bool(self.pair)

    def wrap_pair(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        """(ids, token type ids) of the sentence pair (a, b) in the encoder-only role."""
        if not self.pair:
            raise ValueError("this tokenizer reads one sentence at a time, not a pair")
        ids: list[int] = []
        types: list[int] = []
        for part in PAIR_PARTS:
            piece = a if part == "a" else b if part == "b" else self.pair.get(part, [])
            ids += piece
            types += [self.pair.get(f"{part}_type", [0])[0]] * len(piece)
        return ids, types

    @property
    def pad_id(self) -> int:
        """The id used to pad a batch (a model without <pad> pads with its end token, or 0)."""
        for candidate in (self.pad, self.eos, self.bos):
            if candidate is not None:
                return candidate
        return 0

    @property
    def start_id(self) -> int | None:
        """The token a prompt that is empty (and gets no prefix) starts from: GPT-2's <|endoftext|>."""
        return self.bos if self.bos is not None else self.eos

    def to_ids(self) -> set[int]:
        """Every special token's id."""
        return {i for i in (self.pad, self.bos, self.eos, self.unk, self.cls, self.sep, self.mask) if i is not None}

    def hidden_ids(self) -> set[int]:
        """Ids that decoding text leaves out (pad, bos, eos, cls, sep)."""
        return {i for i in (self.pad, self.bos, self.eos, self.cls, self.sep) if i is not None}

    def to_dict(self) -> dict:
        named = {k: getattr(self, k) for k in ("pad", "bos", "eos", "unk", "cls", "sep", "mask")}
        return {
            **{k: v for k, v in named.items() if v is not None},
            "prefix": self.prefix,
            "suffix": self.suffix,
            "description": self.description,
            **({"pair": self.pair} if self.pair else {}),
        }


def attnlab_specials() -> Specials:
    """attnlab's own tokenizers: <pad> <s> </s> <unk> are ids 0-3."""
    pad, bos, eos, unk = 0, 1, 2, 3
    return Specials(
        pad=pad,
        bos=bos,
        eos=eos,
        unk=unk,
        prefix={"encoder-only": [bos], "decoder": [bos]},
        suffix={"encoder": [eos], "encoder-only": [eos]},
        description="source: pieces </s>; encoder-only: <s> pieces </s>; decoder: <s> pieces",
    )


ATTNLAB_SPECIALS = attnlab_specials()


def specials_from_dict(data: dict) -> Specials:
    """The inverse of `Specials.to_dict()` (JSON turns the ids into ints again)."""
    ids = {k: int(data[k]) for k in ("pad", "bos", "eos", "unk", "cls", "sep", "mask") if data.get(k) is not None}
    return Specials(
        **ids,
        prefix={k: [int(i) for i in v] for k, v in dict(data.get("prefix", {})).items()},
        suffix={k: [int(i) for i in v] for k, v in dict(data.get("suffix", {})).items()},
        description=str(data.get("description", "")),
        pair={k: [int(i) for i in v] for k, v in dict(data.get("pair", {})).items()},
    )
