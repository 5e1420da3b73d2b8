"""Tokenizer folders of the BART family, built here from tiny trained vocabularies (nothing downloaded): BART's
byte-level BPE (vocab.json + merges.txt, or the tokenizer.json transformers writes) and mBART's Unigram with the
fairseq language codes (the tokenizer.json MBartTokenizer writes). Used by test_hf_bart_tokenizers.py and
test_hf_bart_generate.py."""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from tests.support import tokenizer_layouts as L

MBART_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # ids 0-3, as fairseq numbers them


def bart_vocab(folder: Path) -> Path:
    """vocab.json + merges.txt with <s> <pad> </s> <unk> <mask> first (ids 0-4), model_type bart."""
    return L.byte_level_vocab(folder, "bart", L.ROBERTA_SPECIALS, "BartTokenizer")


def bart_json(source: Path, folder: Path) -> Path:
    return L.saved_by_transformers(source, folder, "bart")


def mbart_json(folder: Path, tokenizer_class: str = "MBartTokenizer", saved_lang: str = "en_XX", **tok_config) -> Path:
    """The tokenizer.json + tokenizer_config.json MBartTokenizer writes (its source language `saved_lang`) for a
    tiny Unigram vocabulary followed by the 25 language codes and <mask>; tok_config (src_lang …) is merged into
    tokenizer_config.json afterwards."""
    from transformers.models.mbart.tokenization_mbart import FAIRSEQ_LANGUAGE_CODES

    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.train_from_iterator(
        L.CORPUS,
        trainers.UnigramTrainer(vocab_size=300, special_tokens=MBART_SPECIALS, unk_token="<unk>", show_progress=False),
    )
    pieces = [tuple(p) for p in json.loads(unigram.to_str())["model"]["vocab"]]
    vocab = pieces + [(code, 0.0) for code in FAIRSEQ_LANGUAGE_CODES] + [("<mask>", 0.0)]
    transformers.MBartTokenizer(vocab=vocab, src_lang=saved_lang).save_pretrained(str(folder))
    L.write_json(folder / "config.json", {"model_type": "mbart"})
    return L.config(folder, "mbart", tokenizer_class=tokenizer_class, **tok_config)


def vocab_size(folder: Path) -> int:
    return len(transformers.AutoTokenizer.from_pretrained(str(folder)))


def pegasus_json(folder: Path) -> Path:
    """The tokenizer.json + tokenizer_config.json PegasusTokenizer writes for a tiny Unigram vocabulary (<pad> 0,
    </s> 1, <mask_2> 2, <unk> 3; offset 0: no <unk_2> … slots)."""
    specials = ["<pad>", "</s>", "<mask_2>", "<unk>"]
    unigram = Tokenizer(models.Unigram())
    unigram.pre_tokenizer = pre_tokenizers.Metaspace()
    unigram.train_from_iterator(
        L.CORPUS,
        trainers.UnigramTrainer(vocab_size=300, special_tokens=specials, unk_token="<unk>", show_progress=False),
    )
    vocab = [(p, 0.0 if p in specials else s) for p, s in json.loads(unigram.to_str())["model"]["vocab"]]
    transformers.PegasusTokenizer(vocab=vocab, offset=0).save_pretrained(str(folder))
    return L.config(folder, "pegasus")
