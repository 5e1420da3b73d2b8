"""A model's own tokenizer: token ids (with the specials each family adds) agree with transformers'
AutoTokenizer built from the same files. The files are made here: tiny BPE / WordPiece vocabularies trained
with `tokenizers`, a SentencePiece model trained with sentencepiece, nothing downloaded."""

from __future__ import annotations

import json

import pytest

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_files import folder_tokenizers

transformers = pytest.importorskip("transformers")
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

SENTENCES = [
    "Hello, world!",
    "The CAT sat on the mat.",
    "It costs $3.14 (or 42 euros).",
    "Café déjà vu, naïve.",
    "I ❤️ emoji 😀!",
    "don't STOP-me now",
    "  spaced   out  ",
    "Ünïcödé ßtraße",
]
CORPUS = [s * 2 for s in SENTENCES] * 20 + ["a quick brown fox jumps over the lazy dog"] * 20


def hf_ids(folder, text, **kw):
    auto = transformers.AutoTokenizer.from_pretrained(str(folder), **kw)
    return auto(text)["input_ids"]


def ours(folder, model_type):
    problems = Problems(folder)
    src, tgt, desc = folder_tokenizers(folder, {"model_type": model_type}, problems)
    assert not problems, problems.items
    return src, tgt


def byte_level_files(folder, special_tokens):
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
    return tok


def test_gpt2_vocab_and_merges_match_transformers_and_add_nothing(tmp_path):
    byte_level_files(tmp_path, ["<|endoftext|>"])
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    tok, _ = ours(tmp_path, "gpt2")
    for text in SENTENCES + ["<|endoftext|>after"]:
        ids = tok.specials.wrap("decoder", tok.encode(text)[1])
        assert ids == hf_ids(tmp_path, text), text
    assert tok.specials.prefix.get("decoder", []) == []
    assert tok.specials.eos == tok.encode("<|endoftext|>")[1][0]
    assert tok.decode(tok.encode("Café déjà vu")[1]) == "Café déjà vu"


def test_roberta_wraps_in_s_and_slash_s(tmp_path):
    byte_level_files(tmp_path, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "RobertaTokenizer"}))
    tok, _ = ours(tmp_path, "roberta")
    for text in SENTENCES:
        assert tok.specials.wrap("encoder-only", tok.encode(text)[1]) == hf_ids(tmp_path, text), text
    assert tok.specials.description == "<s> … </s>"


@pytest.mark.parametrize("lower", [True, False])
def test_bert_vocab_txt_matches_transformers_with_cls_sep(tmp_path, lower):
    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.train_from_iterator(
        [s.lower() if lower else s for s in CORPUS],
        trainers.WordPieceTrainer(
            vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False
        ),
    )
    vocab = sorted(wp.get_vocab().items(), key=lambda kv: kv[1])
    (tmp_path / "vocab.txt").write_text("\n".join(t for t, _ in vocab) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "BertTokenizer", "do_lower_case": lower})
    )
    tok, _ = ours(tmp_path, "bert")
    for text in SENTENCES + ["the [MASK] sat."]:
        assert tok.specials.wrap("encoder-only", tok.encode(text)[1]) == hf_ids(tmp_path, text), text
    assert tok.id_to_token(tok.specials.cls) == "[CLS]" and tok.id_to_token(tok.specials.mask) == "[MASK]"


def test_tokenizer_json_matches_transformers(tmp_path):
    tok = byte_level_files(tmp_path, ["<|endoftext|>"])
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    ours_tok, _ = ours(tmp_path, "gpt2")
    for text in SENTENCES:
        assert ours_tok.encode(text)[1] == hf_ids(tmp_path, text)


def test_marian_sentencepiece_source_and_target(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS * 3), encoding="utf-8")
    for name in ("source", "target"):
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(tmp_path / name),
            vocab_size=70,
            hard_vocab_limit=False,
            minloglevel=2,
            character_coverage=1.0,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,
        )
        (tmp_path / f"{name}.model").rename(tmp_path / f"{name}.spm")
    pieces = [line.split("\t")[0] for line in (tmp_path / "source.vocab").read_text(encoding="utf-8").splitlines()]
    vocab = {"</s>": 0, "<unk>": 1, ">>fr<<": 2}
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    vocab["<pad>"] = len(vocab)
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "MarianTokenizer"}))
    src, tgt = ours(tmp_path, "marian")
    for text in SENTENCES + [">>fr<< hello there"]:
        assert src.specials.wrap("encoder", src.encode(text)[1]) == hf_ids(tmp_path, text), text
    assert tgt.specials.prefix["decoder"] == [vocab["<pad>"]]
    assert src.encode(">>fr<< hello")[0][0] == ">>fr<<"
    assert src.decode(src.encode("the lazy dog")[1]) == "the lazy dog"


def test_sentencepiece_missing_names_the_install_command(monkeypatch):
    import builtins

    from attnlab.engine import hf_tokenizer

    real_import = builtins.__import__

    def no_sentencepiece(name, *args, **kwargs):
        if name == "sentencepiece":
            raise ImportError("No module named 'sentencepiece'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sentencepiece)
    with pytest.raises(ImportError) as info:
        hf_tokenizer.load_sentencepiece(b"")
    assert 'pip install "attnlab[hf]"' in str(info.value)
