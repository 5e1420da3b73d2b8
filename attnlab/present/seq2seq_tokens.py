"""What the tokenization page says about the special tokens of an imported encoder-decoder (BART, mBART,
Pegasus, Marian): the token the decoder starts from, and mBART's language codes. Qt-free; rich text."""

from __future__ import annotations

import html
import re

LANGUAGE_CODE = re.compile(r"^[a-z]{2}_[A-Z]{2}$")  # mBART's fairseq language codes: en_XX, ro_RO, zh_CN …


def special_token_sentences(side: str, toks: list[str], translating: bool) -> list[str]:
    """Sentences on `side`'s tokens (src or tgt) of an encoder-decoder run ('translating'); [] otherwise."""
    if not translating or not toks:
        return []
    out = []
    if side == "tgt" and toks[0] != "<s>":
        out.append(
            f"This model's decoder starts from {html.escape(toks[0])} (its decoder_start_token_id), not "
            "&lt;s&gt;; that is the token it was trained to read first."
        )
    codes = [t for t in toks if LANGUAGE_CODE.match(t)]
    if codes and side == "src":
        out.append(
            f"{codes[0]} is not a word but a language code: mBART's tokenizer puts the source language's code "
            "beside &lt;/s&gt; (its src_lang), so the encoder is told which language it reads."
        )
    elif codes:
        where = (
            "as its start token"
            if codes[0] == toks[0]
            else "right after its start token (generate() forces it as the first token)"
        )
        out.append(
            f"{codes[0]} is a language code, not a word: the decoder is given the target language's code {where}, "
            "which tells it which language to write."
        )
    return out
