"""DeBERTa-v2/v3's spm.model as transformers 5 reads it: not through SentencePiece's own normaliser, but as a
`tokenizers` Unigram over the model's pieces and scores with DebertaV2Tokenizer's normaliser (runs of
whitespace to one space, NFC, no trailing space), Metaspace pre-tokenizer and decoder, and the special tokens
the pieces lack ([MASK]) added after them (transformers' tokenization_deberta_v2.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attnlab.bounded_read import MAX_VOCAB_BYTES, confined, read_bytes
from attnlab.engine.hf_tokenizer import load_sentencepiece

SPM = "spm.model"
DESCRIPTION = "spm.model (SentencePiece pieces, read as transformers' DebertaV2Tokenizer)"
SPECIALS = {"bos": "[CLS]", "eos": "[SEP]", "unk": "[UNK]", "sep": "[SEP]", "pad": "[PAD]", "cls": "[CLS]"}
SPECIALS_ORDER = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")  # DebertaV2Tokenizer's keywords


def token_name(tok_config: dict[str, Any], name: str, default: str) -> str:
    value = tok_config.get(f"{name}_token", default)
    value = value.get("content", default) if isinstance(value, dict) else value
    return value if isinstance(value, str) else default


def deberta_tokenizer(folder: Path, tok_config: dict[str, Any]) -> Any:  # a tokenizers.Tokenizer
    """The tokenizers.Tokenizer transformers builds for a DeBERTa folder holding spm.model (and no tokenizer.json)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    sp = load_sentencepiece(read_bytes(confined(folder, SPM, SPM), SPM, MAX_VOCAB_BYTES))
    vocab = [(sp.id_to_piece(i), float(sp.get_score(i))) for i in range(sp.get_piece_size())]
    names = {n: token_name(tok_config, n, SPECIALS.get(n, "[MASK]")) for n in SPECIALS_ORDER}
    unk = (names["unk"], 0.0)
    tok = Tokenizer(models.Unigram(vocab, unk_id=vocab.index(unk) if unk in vocab else 1, byte_fallback=False))
    steps: list[Any] = [normalizers.Lowercase()] if tok_config.get("do_lower_case") else []
    steps += [normalizers.Replace(Regex(r"\s{2,}|[\n\r\t]"), " "), normalizers.NFC(), normalizers.Strip(False, True)]
    tok.normalizer = normalizers.Sequence(steps)
    scheme = "always" if tok_config.get("add_prefix_space", True) else "first"
    split = [pre_tokenizers.Punctuation(behavior="isolated")] if tok_config.get("split_by_punct") else []
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [*split, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme)]
    )
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme)
    tok.add_special_tokens(list(dict.fromkeys(names[n] for n in SPECIALS_ORDER)))  # [MASK] after the pieces
    return tok
