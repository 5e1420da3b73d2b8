"""Tokenizer folders in every layout a model folder ships, built here (nothing downloaded): tiny WordPiece,
byte-level BPE and SentencePiece (BPE and Unigram) vocabularies trained on a few lines, then written as the
files of each layout, some through transformers' own save_pretrained (the tokenizer.json it writes).
Used by test_tokenizer_layouts.py."""

from __future__ import annotations

import json
from pathlib import Path

import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

SENTENCES = [
    "Hello, world!",
    "The CAT sat on the mat.",
    "It costs $3.14 (or 42 euros) in 2024.",
    "Café déjà vu, naïve.",
    "I ❤️ emoji 😀!",
    "don't STOP-me now",
    "Ünïcödé ßtraße",
    "a quick brown fox jumps over the lazy dog",
]
LONG = " ".join(["the quick brown fox jumps over the lazy dog."] * 40)  # ~400 tokens: past any stored 128
CORPUS = [s * 2 for s in SENTENCES] * 20 + ["a quick brown fox jumps over the lazy dog"] * 20
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data), encoding="utf-8")


def config(folder: Path, model_type: str, **tok_config) -> Path:
    write_json(folder / "config.json", {"model_type": model_type})
    if tok_config:
        old = (
            json.loads((folder / "tokenizer_config.json").read_text())
            if (folder / "tokenizer_config.json").is_file()
            else {}
        )
        write_json(folder / "tokenizer_config.json", {**old, **tok_config})
    return folder


def wordpiece_vocab(folder: Path, lower: bool) -> Path:
    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.train_from_iterator(
        [s.lower() if lower else s for s in CORPUS],
        trainers.WordPieceTrainer(vocab_size=300, special_tokens=BERT_SPECIALS, show_progress=False),
    )
    vocab = sorted(wp.get_vocab().items(), key=lambda kv: kv[1])
    (folder / "vocab.txt").write_text("\n".join(t for t, _ in vocab) + "\n", encoding="utf-8")
    write_json(folder / "tokenizer_config.json", {"tokenizer_class": "BertTokenizer", "do_lower_case": lower})
    return config(folder, "bert")


def byte_level_vocab(folder: Path, model_type: str, special_tokens: list[str], tokenizer_class: str) -> Path:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=special_tokens,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok.model.save(str(folder))
    write_json(folder / "tokenizer_config.json", {"tokenizer_class": tokenizer_class})
    return config(folder, model_type)


def sentencepiece_model(folder: Path, name: str, model_type: str, kind: str = "bpe", **ids) -> Path:
    import sentencepiece

    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(CORPUS), encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "m"),
        vocab_size=400,
        model_type=kind,
        hard_vocab_limit=False,
        character_coverage=1.0,
        byte_fallback=kind == "bpe",
        minloglevel=2,
        **ids,
    )
    (folder / "m.model").rename(folder / name)
    for extra in ("m.vocab", "corpus.txt"):
        (folder / extra).unlink()
    return config(folder, model_type)


def saved_by_transformers(source: Path, folder: Path, model_type: str, **tok_config) -> Path:
    """The tokenizer.json (+ tokenizer_config.json, special_tokens_map.json) that transformers writes for the
    tokenizer it reads from `source`; tok_config is merged into the written tokenizer_config.json."""
    transformers.AutoTokenizer.from_pretrained(str(source)).save_pretrained(str(folder))
    for name in ("vocab.txt", "vocab.json", "merges.txt", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model"):
        (folder / name).unlink(missing_ok=True)  # tokenizer.json alone
    return config(folder, model_type, **tok_config)


def stored_padding_and_truncation(folder: Path) -> Path:
    """As sentence-transformers ship a BERT: padding Fixed 128 and truncation 128 inside tokenizer.json."""
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    data["padding"] = {
        "strategy": {"Fixed": 128},
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": 0,
        "pad_type_id": 0,
        "pad_token": "[PAD]",
    }
    data["truncation"] = {"direction": "Right", "max_length": 128, "strategy": "LongestFirst", "stride": 0}
    write_json(folder / "tokenizer.json", data)
    return folder


def read_model_type(folder: Path) -> str:
    return str(json.loads((folder / "config.json").read_text(encoding="utf-8"))["model_type"])


def llama_post_processor(folder: Path, adds_bos: bool) -> Path:
    """tokenizer.json's post-processor as Llama 2 / 3 ship it ("<s> $A"), or none at all (null)."""
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    bos = {"SpecialToken": {"id": "<s>", "type_id": 0}}
    data["post_processor"] = (
        {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, bos, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        }
        if adds_bos
        else None
    )
    write_json(folder / "tokenizer.json", data)
    return folder
