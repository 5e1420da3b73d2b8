"""The BART family's tokenizer rules (bart, mbart, pegasus), as transformers 5 applies them:

source   BART <s> … </s> (RobertaTokenizer's RobertaProcessing); Pegasus … </s>;
         mBART … </s> [src_lang] (MBartTokenizer), or [src_lang] … </s> (MBart50Tokenizer): the language code
         comes from tokenizer_config.json's src_lang (en_XX when absent), whatever tokenizer.json stores, because
         the tokenizer class rebuilds its post-processor from src_lang (set_src_lang_special_tokens)
decoder  starts from decoder_start_token_id (generation_config.json, else config.json, else the config class's
         default: BART </s> = 2, Pegasus <pad> = 0, mBART bos_token_id), then forced_bos_token_id when one is
         set (generate() forces it as the first new token: BART-large's <s>, mBART-50's target language)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

FAMILIES = ("bart", "mbart", "pegasus")
MAX_ID = 2**32  # the tokenizers library's ids are u32: a larger number is no token of any vocabulary
DEFAULT_START = {"bart": 2, "pegasus": 0}  # BartConfig / PegasusConfig's decoder_start_token_id; mBART: bos
DEFAULT_SOURCE_LANGUAGE = "en_XX"  # MBartTokenizer / MBart50Tokenizer without src_lang
LANGUAGE_FIRST = ("MBart50Tokenizer", "MBart50TokenizerFast")  # [src_lang] … </s>; the others: … </s> [src_lang]
GENERATION_KEYS = ("decoder_start_token_id", "forced_bos_token_id", "bos_token_id")
# a SentencePiece model alone numbers these families' pieces differently from their tokenizer classes (mBART
# appends the language codes after it, Pegasus shifts every piece by `offset` = 103 special slots)
SPM_ONLY_REFUSED = {
    "mbart": "mBART's language codes are not in its SentencePiece model",
    "pegasus": "PegasusTokenizer numbers the SentencePiece pieces after 103 special slots",
}


def spm_only_problem(model_type: str, name: str) -> str:
    """Why a folder of this family whose only tokenizer file is the SentencePiece model `name` is not read
    ('' when it is)."""
    why = SPM_ONLY_REFUSED.get(model_type)
    return f"{name}: {why}; attnlab reads {model_type}'s tokenizer from tokenizer.json" if why else ""


def with_generation_config(folder: Path, hf_config: dict[str, Any], read: Callable[[Path], dict]) -> dict[str, Any]:
    """config.json's fields with generation_config.json's start tokens over them (what generate() reads), for
    the BART family; `read(path)` is the folder's bounded JSON reader ({} when the file is absent)."""
    if hf_config.get("model_type") not in FAMILIES:
        return hf_config
    generation = read(folder / "generation_config.json")
    return {**hf_config, **{k: generation[k] for k in GENERATION_KEYS if generation.get(k) is not None}}


def decoder_starts(model_type: str, hf_config: dict[str, Any], token_of: Callable[[int], str | None]) -> list[int]:
    """The ids the decoder's input begins with: the start token, then the forced first token if any.
    ValueError naming the field when one is not a token of the tokenizer."""
    start = hf_config.get("decoder_start_token_id")
    if start is None:
        start = hf_config.get("bos_token_id", 0) if model_type == "mbart" else DEFAULT_START[model_type]
    starts = [("decoder_start_token_id", start)]
    if hf_config.get("forced_bos_token_id") is not None:
        starts.append(("forced_bos_token_id", hf_config["forced_bos_token_id"]))
    for key, value in starts:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < MAX_ID or token_of(value) is None:
            raise ValueError(f"config.json's {key} {value!r} is not a token of this tokenizer")
    return [int(value) for _key, value in starts]


def language_processor(
    model_type: str, tok_config: dict[str, Any], lookup: Callable[[str], int | None], eos: tuple[int, str] | None
) -> Any | None:
    """mBART's post-processor with tokenizer_config.json's source language, `eos` the (id, text) of </s> (None
    for other families, or when the language code or </s> is not in the vocabulary: the stored one stays)."""
    if model_type != "mbart" or eos is None:
        return None
    language = tok_config.get("src_lang") or DEFAULT_SOURCE_LANGUAGE
    code = lookup(language) if isinstance(language, str) else None
    if code is None:
        return None
    from tokenizers import processors

    first = tok_config.get("tokenizer_class") in LANGUAGE_FIRST
    prefix, suffix = ([language], [eos[1]]) if first else ([], [eos[1], language])
    return processors.TemplateProcessing(
        single=[*prefix, "$A", *suffix],
        pair=[*prefix, "$A", "$B", *suffix],
        special_tokens=[(language, code), (eos[1], eos[0])],
    )
