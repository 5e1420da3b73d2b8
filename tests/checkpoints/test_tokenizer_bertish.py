"""The tokenizer files of the BERT-like encoders beyond BERT and RoBERTa (XLM-RoBERTa's, CamemBERT's and
ALBERT's tokenizer.json, ELECTRA's vocab.txt and tokenizer.json), read by attnlab and by transformers'
AutoTokenizer from the same files: the ids (special tokens included) are identical (as in
test_tokenizer_layouts.py)."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("google.protobuf")
from attnlab.engine.hf_tokenizer import SentencePieceModelTokenizer  # noqa: E402
from attnlab.engine.specials import Specials  # noqa: E402
from tests.checkpoints.test_tokenizer_layouts import _copy, _json_of, ours  # noqa: E402
from tests.support import tokenizer_layouts as L  # noqa: E402

ALBERT_SPM = {"pad_id": 0, "unk_id": 1, "bos_id": -1, "eos_id": -1, "user_defined_symbols": "[CLS],[SEP],[MASK]"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict:
    made = {}
    for name, build in (
        ("xlmr-spm", lambda d: L.sentencepiece_model(d, "sentencepiece.bpe.model", "xlm-roberta", "unigram")),
        ("camembert-spm", lambda d: L.sentencepiece_model(d, "sentencepiece.bpe.model", "camembert", "unigram")),
        ("albert-spm", lambda d: L.sentencepiece_model(d, "spiece.model", "albert", "unigram", **ALBERT_SPM)),
        ("bert-lower", lambda d: L.wordpiece_vocab(d, lower=True)),
    ):
        made[name] = build(tmp_path_factory.mktemp(name))
    return made


LAYOUTS = {
    "xlm-roberta tokenizer.json": _json_of("xlmr-spm", "xlm-roberta"),
    "camembert tokenizer.json": _json_of("camembert-spm", "camembert"),
    "albert tokenizer.json": _json_of("albert-spm", "albert"),
    "electra vocab.txt": lambda s, f: L.config(_copy(s["bert-lower"], f), "electra"),
    "electra tokenizer.json": _json_of("bert-lower", "electra"),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ids_equal_autotokenizers(layout, sources, tmp_path):
    folder = LAYOUTS[layout](sources, tmp_path)
    tok, role = ours(folder)
    assert role == "encoder-only"
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    for text in [*L.SENTENCES, L.LONG]:
        expected = auto(text)["input_ids"]
        assert tok.specials.wrap(role, tok.encode(text)[1]) == expected, (layout, text)


@pytest.mark.parametrize(("family", "file"), [("camembert", "sentencepiece.bpe.model"), ("albert", "spiece.model")])
def test_a_sentencepiece_model_attnlab_would_number_wrongly_is_refused(family, file, sources, tmp_path):
    """CamemBERT's and ALBERT's SentencePiece models alone would give ids that differ from AutoTokenizer's (the
    first two layouts above pass only through tokenizer.json): one problem naming the file, no tokenizer."""
    from attnlab.checkpoints.errors import Problems
    from attnlab.checkpoints.tokenizer_files import folder_tokenizers, read_json_file

    folder = _copy(sources[f"{family}-spm"], tmp_path)
    problems = Problems(folder)
    tok, _tgt, _desc = folder_tokenizers(folder, read_json_file(folder / "config.json", problems), problems)
    assert tok is None and len(problems.items) == 1
    assert file in problems.items[0] and "tokenizer.json" in problems.items[0] and "\n" not in problems.items[0]
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    fairseq = SentencePieceModelTokenizer((folder / file).read_bytes(), Specials(), file.endswith("bpe.model"))
    assert fairseq.encode(L.SENTENCES[0])[1] != auto(L.SENTENCES[0], add_special_tokens=False)["input_ids"]
