"""A sentence pair typed in one box ("A [SEP] B", or the model's own separator: RoBERTa's, MPNet's and
XLM-R's "A </s></s> B") is read as the family's own pair layout: the ids and token types equal transformers'
`AutoTokenizer(a, b)` on tiny tokenizers built here (nothing downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_files import folder_tokenizers, read_json_file
from attnlab.engine.config import ModelConfig
from attnlab.engine.live_inputs import InputReader
from attnlab.engine.pairs import pair_help

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("google.protobuf")
from tests.support import tokenizer_layouts as L  # noqa: E402

MPNET_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "[UNK]"]


def _mpnet(folder: Path) -> Path:
    """An MPNet vocab.txt (WordPiece, MPNet's <s> </s> specials), read by transformers' MPNetTokenizer."""
    L.wordpiece_vocab(folder, lower=True)
    words = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
    kept = [w for w in words if w and w not in L.BERT_SPECIALS]
    (folder / "vocab.txt").write_text("\n".join(MPNET_SPECIALS + kept) + "\n", encoding="utf-8")
    L.write_json(folder / "tokenizer_config.json", {"tokenizer_class": "MPNetTokenizer", "do_lower_case": True})
    return L.config(folder, "mpnet")


BUILDERS = {
    "bert": lambda d: L.wordpiece_vocab(d, lower=True),
    "roberta": lambda d: L.byte_level_vocab(d, "roberta", L.ROBERTA_SPECIALS, "RobertaTokenizer"),
    "xlm-roberta": lambda d: L.sentencepiece_model(d, "sentencepiece.bpe.model", "xlm-roberta", "unigram"),
    "mpnet": _mpnet,
}
OWN = {"bert": "[SEP]", "roberta": "</s></s>", "xlm-roberta": "</s></s>", "mpnet": "</s></s>"}


def _reader(folder: Path) -> InputReader:
    problems = Problems(folder)
    hf_config = read_json_file(folder / "config.json", problems)
    tok = folder_tokenizers(folder, hf_config, problems)[0]
    assert tok is not None and not problems, problems.items
    config = ModelConfig(arch="encoder-only", max_len=256)
    return InputReader(config, tok, None, {})


@pytest.mark.parametrize("family", BUILDERS)
def test_a_typed_pair_follows_the_familys_layout(family, tmp_path):
    folder = BUILDERS[family](tmp_path)
    reader = _reader(folder)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    a, b = "the cat sat on the mat.", "a quick brown fox"
    expected = auto(a, b, return_token_type_ids=True)
    for typed in (f"{a} [SEP] {b}", f"{a} {OWN[family]} {b}", f"{a}{OWN[family]}{b}", f"{a} </s> {b}"):
        if family == "bert" and "</s>" in typed:
            continue  # BERT's vocabulary has no </s>: that text is one sentence
        assert reader.sentence_pair(typed) == (a, b), typed
        types: dict = {}
        pieces, ids, n_real = reader.side(typed, "src", 0, [], types)
        assert ids == expected["input_ids"], (family, typed, pieces)
        assert types["src"] == expected["token_type_ids"], (family, typed)
        assert "sep" not in pieces and "[" not in pieces  # the separator is never read as words
    assert reader.sentence_pair(a) is None


@pytest.mark.parametrize("family", ["bert", "mpnet"])
def test_the_help_says_how_to_type_a_pair(family, tmp_path):
    reader = _reader(BUILDERS[family](tmp_path))
    text = pair_help(reader.src_tokenizer)
    assert "A [SEP] B" in text
    assert ("its own separator </s></s>" in text) == (family == "mpnet")
    assert text.endswith("[CLS] A [SEP] B [SEP]" if family == "bert" else "<s> A </s></s> B </s>")
