"""Which special tokens a model's tokenizer puts around its input, decided as transformers (5.x) decides it.

The wrapping is the tokenizer's *post-processor* (a `tokenizers` TemplateProcessing, BertProcessing,
RobertaProcessing, ByteLevel, …); attnlab reads it off by running it on two sentinel ids, so the ids before,
between and after the sentences and each part's token type are exactly the library's. Which post-processor:

  tokenizer.json                the one stored in the file, or none when it is null (transformers 5 drops
                                tokenizer_config's add_bos_token / add_eos_token when there is a tokenizer.json:
                                tokenization_utils_base._from_pretrained);
  vocab.txt, vocab.json+merges, the one the family's transformers tokenizer class builds (FAMILY_TEMPLATES:
  *.model (SentencePiece)       BERT [CLS] $A [SEP], RoBERTa / XLM-R <s> $A </s>, T5 $A </s>; none for the rest),
                                but when tokenizer_config.json says add_bos_token or add_eos_token, or the family
                                builds none: "<bos>? $A <eos>?" with those flags (absent = false), as
                                TokenizersBackend.update_post_processor does.

Stored padding and truncation in tokenizer.json are switched off: transformers applies neither unless a call
asks for it (`set_truncation_and_padding`), and attnlab never asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnlab.engine.specials import Specials
from attnlab.engine.tokenizer import guarded

# model_type -> (single, pair) templates over the family's token names (NAMES in tokenizer_files.py)
FAMILY_TEMPLATES: dict[str, tuple[str, str]] = {
    "bert": ("cls:0 $A:0 sep:0", "cls:0 $A:0 sep:0 $B:1 sep:1"),
    "roberta": ("cls $A sep", "cls $A sep sep $B sep"),
    "xlm-roberta": ("bos $A eos", "bos $A eos eos $B eos"),
    "t5": ("$A eos", "$A eos $B eos"),
    "marian": ("$A eos", "$A eos $B eos"),
}
FAMILY_TEMPLATES["distilbert"] = FAMILY_TEMPLATES["bert"]
FAMILY_TEMPLATES["camembert"] = FAMILY_TEMPLATES["xlm-roberta"]
# the BART family (checkpoints/tokenizer_seq2seq.py): BartTokenizer is RobertaTokenizer; mBART's is built there
FAMILY_TEMPLATES["bart"] = FAMILY_TEMPLATES["roberta"]
FAMILY_TEMPLATES["pegasus"] = FAMILY_TEMPLATES["t5"]
FAMILY_TEMPLATES["electra"] = FAMILY_TEMPLATES["albert"] = FAMILY_TEMPLATES["bert"]  # w-bertish
FAMILY_TEMPLATES["deberta-v2"] = FAMILY_TEMPLATES["bert"]  # DebertaV2Tokenizer: [CLS] $A [SEP] (types 0, 1)
FAMILY_TEMPLATES["mpnet"] = FAMILY_TEMPLATES["roberta"]  # MPNetTokenizer: <s> A </s> (</s></s> B </s>)
# the role a family's single sentence plays (engine/specials.py); every other family is a decoder
FAMILY_ROLES = {
    "bert": "encoder-only",
    "distilbert": "encoder-only",
    "roberta": "encoder-only",
    "xlm-roberta": "encoder-only",
    "camembert": "encoder-only",
    "electra": "encoder-only",
    "albert": "encoder-only",
    "marian": "encoder",
    "t5": "encoder",
    "bart": "encoder",
    "mbart": "encoder",
    "pegasus": "encoder",
    "deberta-v2": "encoder-only",
    "mpnet": "encoder-only",
}
SENTINEL_A, SENTINEL_B = 4_000_000_000, 4_000_000_001  # ids no vocabulary has (the library's ids are u32)


def family_processor(model_type: str, ids: dict[str, int], token_of: Callable[[int], str]) -> Any | None:
    """The post-processor the family's transformers tokenizer class builds (None: it builds none)."""
    if model_type not in FAMILY_TEMPLATES or any(
        name not in ids for t in FAMILY_TEMPLATES[model_type] for name in _names_in(t)
    ):
        return None
    return _template(*FAMILY_TEMPLATES[model_type], ids, token_of)


def flag_processor(tok_config: dict[str, Any], ids: dict[str, int], token_of: Callable[[int], str]) -> Any:
    """TokenizersBackend.update_post_processor: <bos> and <eos> by tokenizer_config's add_bos/add_eos_token."""
    bos = bool(tok_config.get("add_bos_token")) and "bos" in ids  # no such token: not added (as there)
    eos = bool(tok_config.get("add_eos_token")) and "eos" in ids
    single = " ".join(p for p, on in (("bos:0", bos), ("$A:0", True), ("eos:0", eos)) if on)
    pair = " ".join(p for p, on in ((single, True), ("bos:1", bos), ("$B:1", True), ("eos:1", eos)) if on)
    return _template(single, pair, ids, token_of)


def flags_given(tok_config: dict[str, Any]) -> bool:
    return "add_bos_token" in tok_config or "add_eos_token" in tok_config


def _names_in(template: str) -> list[str]:
    return [part.split(":")[0] for part in template.split() if not part.startswith("$")]


def _template(single: str, pair: str, ids: dict[str, int], token_of: Callable[[int], str]) -> Any:
    """A TemplateProcessing with the token names replaced by the tokenizer's strings for them."""
    from tokenizers import processors

    def spelled(template: str) -> str:
        out = []
        for part in template.split():
            name, _, type_id = part.partition(":")
            text = name if name.startswith("$") else token_of(ids[name])
            out.append(f"{text}:{type_id}" if type_id else text)
        return " ".join(out)

    used = {n for t in (single, pair) for n in _names_in(t)}
    return processors.TemplateProcessing(
        single=spelled(single), pair=spelled(pair), special_tokens=[(token_of(ids[n]), ids[n]) for n in sorted(used)]
    )


def read_processor(processor: Any | None) -> tuple[list[int], list[int], dict[str, list[int]]]:
    """(prefix, suffix, pair) of a post-processor: run it on sentinel ids and see where they land.
    `pair` is empty when the processor puts nothing between two sentences (it reads no pairs). ValueError
    when the processor cannot be run."""
    if processor is None:
        return [], [], {}
    from tokenizers import Tokenizer, models, pre_tokenizers

    probe = Tokenizer(models.WordLevel({"A": SENTINEL_A, "B": SENTINEL_B, "?": 0}, unk_token="?"))
    probe.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    a, b = (probe.encode(x, add_special_tokens=False) for x in ("A", "B"))
    doing = "wrap a sentence in its special tokens (its post-processor)"
    single = guarded(lambda: processor.process(a, None, True), doing).ids  # even a Rust panic: TokenizerError
    both = guarded(lambda: processor.process(a, b, True), doing)
    if SENTINEL_A not in single or not {SENTINEL_A, SENTINEL_B} <= set(both.ids):
        raise ValueError("its post-processor leaves out the sentence it wraps")
    at = single.index(SENTINEL_A)
    i, j = both.ids.index(SENTINEL_A), both.ids.index(SENTINEL_B)
    types = both.type_ids
    pair = {
        "prefix": both.ids[:i],
        "middle": both.ids[i + 1 : j],
        "suffix": both.ids[j + 1 :],
        "a_type": [types[i]],
        "b_type": [types[j]],
        **{
            f"{part}_type": [types[k]]
            for part, k in (("prefix", 0), ("middle", i + 1), ("suffix", j + 1))
            if k < len(types)
        },
    }
    return single[:at], single[at + 1 :], pair if pair["middle"] else {}


def wrapping(
    model_type: str,
    processor: Any | None,
    ids: dict[str, int],
    start: int | list[int] | None,
    token_of: Callable[[int], str],
) -> Specials:
    """The Specials of a tokenizer whose post-processor is `processor`: its single-sentence template for the
    family's role, its pair template, and an encoder-decoder's decoder start (`start`: Marian/T5's one id, or
    the BART family's ids, tokenizer_seq2seq.decoder_starts)."""
    prefix, suffix, pair = read_processor(processor)
    role = FAMILY_ROLES.get(model_type, "decoder")
    shown = " ".join([*map(token_of, prefix), "…", *map(token_of, suffix)])
    description = "no special tokens added" if shown == "…" else shown
    starts = [start] if isinstance(start, int) else list(start or [])
    if starts and role == "encoder":
        description = f"source: {description}; decoder starts from {' '.join(map(token_of, starts))}"
    names = ("pad", "bos", "eos", "unk", "cls", "sep", "mask")
    return Specials(
        **{k: ids.get(k) for k in names},
        prefix={role: prefix, **({"decoder": starts} if starts and role == "encoder" else {})},
        suffix={role: suffix},
        description=description,
        pair=pair if role == "encoder-only" else {},
    )
