"""The BART family's tokenizer folders read by attnlab and by transformers' AutoTokenizer from the same files:
the source ids (special tokens and mBART's language code included) are identical on every sentence; the
decoder starts from decoder_start_token_id and the forced first token (generation_config.json over
config.json). Folders built in bart_tokenizers.py (nothing downloaded)."""

from __future__ import annotations

import json

import pytest

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_files import folder_tokenizers, read_json_file

transformers = pytest.importorskip("transformers")
from tests.support import bart_tokenizers as B  # noqa: E402
from tests.support import tokenizer_layouts as L  # noqa: E402


def ours(folder):
    problems = Problems(folder)
    tok, _tgt, _desc = folder_tokenizers(folder, read_json_file(folder / "config.json", problems), problems)
    assert not problems, problems.items
    assert tok is not None
    return tok


def assert_sources_equal(folder, tok) -> list[int]:
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    last = []
    for text in [*L.SENTENCES, L.LONG]:
        last = auto(text)["input_ids"]
        assert tok.specials.wrap("encoder", tok.encode(text)[1]) == last, (folder.name, text)
    return last


@pytest.fixture(scope="module")
def bart_source(tmp_path_factory):
    return B.bart_vocab(tmp_path_factory.mktemp("bart"))


@pytest.mark.parametrize("layout", ["vocab.json + merges.txt", "tokenizer.json"])
def test_bart_sources_are_wrapped_in_s_and_end(layout, bart_source, tmp_path):
    folder = bart_source if layout == "vocab.json + merges.txt" else B.bart_json(bart_source, tmp_path)
    tok = ours(folder)
    ids = assert_sources_equal(folder, tok)
    assert tok.id_to_token(ids[0]) == "<s>" and tok.id_to_token(ids[-1]) == "</s>"
    assert tok.specials.prefix["decoder"] == [2]  # BartConfig's decoder_start_token_id: </s>


def test_bart_decoder_starts_as_generate_does(bart_source, tmp_path):
    """config.json's decoder_start_token_id, then generation_config.json's forced_bos_token_id (BART-large's <s>)."""
    folder = B.bart_json(bart_source, tmp_path)
    L.write_json(folder / "config.json", {"model_type": "bart", "decoder_start_token_id": 2})
    L.write_json(folder / "generation_config.json", {"forced_bos_token_id": 0, "decoder_start_token_id": 2})
    tok = ours(folder)
    assert [tok.id_to_token(i) for i in tok.specials.wrap("decoder", [])] == ["</s>", "<s>"]
    assert "decoder starts from </s> <s>" in tok.specials.description


@pytest.mark.parametrize("value", [10**6, 10**20, -1, "0", True])
def test_a_start_token_outside_the_vocabulary_is_one_problem(value, bart_source, tmp_path):
    folder = B.bart_json(bart_source, tmp_path)
    L.write_json(folder / "config.json", {"model_type": "bart", "forced_bos_token_id": value})
    problems = Problems(folder)
    tok, _tgt, _desc = folder_tokenizers(folder, read_json_file(folder / "config.json", problems), problems)
    assert tok is None and len(problems.items) == 1
    assert "forced_bos_token_id" in problems.items[0] and "\n" not in problems.items[0]


@pytest.mark.parametrize(
    ("tokenizer_class", "tok_config", "language", "first"),
    [
        ("MBartTokenizer", {"src_lang": "ro_RO"}, "ro_RO", False),
        ("MBartTokenizer", {}, "en_XX", False),  # no src_lang: the class's default
        ("MBart50Tokenizer", {"src_lang": "de_DE"}, "de_DE", True),
    ],
)
def test_mbart_sources_carry_their_language_code(tokenizer_class, tok_config, language, first, tmp_path):
    folder = B.mbart_json(tmp_path, tokenizer_class, **tok_config)
    tok = ours(folder)
    ids = assert_sources_equal(folder, tok)
    ends = [tok.id_to_token(i) for i in (ids[:1] if first else ids[-2:])]
    assert ends == ([language] if first else ["</s>", language])


def test_mbart_language_follows_tokenizer_config_not_the_stored_template(tmp_path):
    """MBartTokenizer rebuilds its post-processor from src_lang: a tokenizer.json saved for ro_RO reads en_XX
    when tokenizer_config.json names en_XX, in transformers and in attnlab."""
    folder = B.mbart_json(tmp_path, saved_lang="ro_RO")
    stored = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["post_processor"]
    assert "ro_RO" in json.dumps(stored)
    L.config(folder, "mbart", src_lang="en_XX")
    tok = ours(folder)
    ids = assert_sources_equal(folder, tok)
    assert tok.id_to_token(ids[-1]) == "en_XX"


def test_pegasus_sources_end_with_eos_and_the_decoder_starts_from_pad(tmp_path):
    folder = B.pegasus_json(tmp_path)
    tok = ours(folder)
    ids = assert_sources_equal(folder, tok)
    assert tok.id_to_token(ids[-1]) == "</s>" and tok.specials.wrap("decoder", []) == [0]  # PegasusConfig's start


@pytest.mark.parametrize(("model_type", "name"), [("mbart", "sentencepiece.bpe.model"), ("pegasus", "spiece.model")])
def test_a_sentencepiece_model_alone_is_refused_for_families_that_renumber_it(model_type, name, tmp_path):
    pytest.importorskip("sentencepiece")
    folder = L.sentencepiece_model(tmp_path, name, model_type, "unigram")
    problems = Problems(folder)
    tok, _tgt, _desc = folder_tokenizers(folder, {"model_type": model_type}, problems)
    assert tok is None and len(problems.items) == 1
    assert name in problems.items[0] and "tokenizer.json" in problems.items[0] and "\n" not in problems.items[0]
