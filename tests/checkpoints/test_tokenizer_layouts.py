"""Every tokenizer layout a model folder ships, read by attnlab and by transformers' AutoTokenizer from the
same files: the ids (special tokens included) are identical on every sentence, and so are the token type ids
of sentence pairs. The folders are built in tokenizer_layouts.py (nothing downloaded)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_files import folder_tokenizers, read_json_file
from attnlab.checkpoints.tokenizer_wrapping import FAMILY_ROLES

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("google.protobuf")  # transformers needs it to read a SentencePiece model alone
from tests.support import tokenizer_layouts as L  # noqa: E402

LLAMA_SPM = {}  # SentencePiece BPE with byte fallback, Llama's ids: <unk> 0, <s> 1, </s> 2
T5_SPM = {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1}
DEBERTA_SPM = {  # DeBERTa-v3's spm.model: [PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3
    **{"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3},
    **{"pad_piece": "[PAD]", "bos_piece": "[CLS]", "eos_piece": "[SEP]", "unk_piece": "[UNK]"},
}


def _copy(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder, dirs_exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    """One trained vocabulary per kind, in its plainest layout (copied by each case)."""
    made = {}
    for name, build in (
        ("bert-lower", lambda d: L.wordpiece_vocab(d, lower=True)),
        ("bert-cased", lambda d: L.wordpiece_vocab(d, lower=False)),
        ("roberta", lambda d: L.byte_level_vocab(d, "roberta", L.ROBERTA_SPECIALS, "RobertaTokenizer")),
        ("gpt2", lambda d: L.byte_level_vocab(d, "gpt2", ["<|endoftext|>"], "GPT2Tokenizer")),
        ("qwen2", lambda d: L.byte_level_vocab(d, "qwen2", ["<|endoftext|>"], "Qwen2Tokenizer")),
        ("llama-spm", lambda d: L.sentencepiece_model(d, "tokenizer.model", "llama")),
        ("t5-spm", lambda d: L.sentencepiece_model(d, "spiece.model", "t5", "unigram", **T5_SPM)),
        ("xlmr-spm", lambda d: L.sentencepiece_model(d, "sentencepiece.bpe.model", "xlm-roberta", "unigram")),
        ("deberta-spm", lambda d: L.sentencepiece_model(d, "spm.model", "deberta-v2", "unigram", **DEBERTA_SPM)),
    ):
        made[name] = build(tmp_path_factory.mktemp(name))
    return made


def _json_of(source: str, model_type: str, **tok_config):
    def build(sources, folder):
        return L.saved_by_transformers(sources[source], folder, model_type, **tok_config)

    return build


def _plain(source: str, **tok_config):
    def build(sources, folder):
        folder = _copy(sources[source], folder)
        return L.config(folder, L.read_model_type(folder), **tok_config) if tok_config else folder

    return build


def _llama_json(adds_bos: bool, **tok_config):
    def build(sources, folder):
        folder = L.saved_by_transformers(sources["llama-spm"], folder, "llama", **tok_config)
        return L.llama_post_processor(folder, adds_bos)

    return build


def _stored_padding(sources, folder):
    return L.stored_padding_and_truncation(L.saved_by_transformers(sources["bert-lower"], folder, "bert"))


def _special_tokens_map(sources, folder):
    """Llama whose BOS is named only in special_tokens_map.json, and added by tokenizer_config.json."""
    folder = L.config(_copy(sources["llama-spm"], folder), "llama", add_bos_token=True)
    L.write_json(folder / "special_tokens_map.json", {"bos_token": "</s>", "eos_token": "</s>"})
    return folder


LAYOUTS = {
    "bert vocab.txt lower-cased": _plain("bert-lower"),
    "bert vocab.txt cased": _plain("bert-cased"),
    "bert tokenizer.json": _json_of("bert-lower", "bert"),
    "bert tokenizer.json with stored padding and truncation": _stored_padding,
    "distilbert vocab.txt": lambda s, f: L.config(_copy(s["bert-lower"], f), "distilbert"),
    "roberta vocab.json + merges.txt": _plain("roberta"),
    "roberta tokenizer.json": _json_of("roberta", "roberta"),
    "gpt2 vocab.json + merges.txt": _plain("gpt2"),
    "gpt2 tokenizer.json": _json_of("gpt2", "gpt2"),
    "qwen2 tokenizer.json": _json_of("qwen2", "qwen2"),
    "llama tokenizer.model only": _plain("llama-spm"),
    "llama tokenizer.model, add_bos_token true": _plain("llama-spm", add_bos_token=True),
    "llama tokenizer.model, add_bos and add_eos true": _plain("llama-spm", add_bos_token=True, add_eos_token=True),
    "llama tokenizer.json adding <s>, add_bos_token true": _llama_json(True, add_bos_token=True),
    "llama tokenizer.json adding <s>, no add_bos_token": _llama_json(True),
    "llama tokenizer.json adding <s>, add_bos_token false": _llama_json(True, add_bos_token=False),
    "llama tokenizer.json as transformers writes it": _json_of("llama-spm", "llama"),
    "llama tokenizer.json no post-processor, add_bos_token true": _llama_json(False, add_bos_token=True),
    "llama tokenizer.json no post-processor, no add_bos_token": _llama_json(False),
    "llama tokenizer.json no post-processor, add_eos_token true": _llama_json(False, add_eos_token=True),
    "llama special_tokens_map.json": _special_tokens_map,
    "t5 spiece.model": _plain("t5-spm"),
    "t5 tokenizer.json": _json_of("t5-spm", "t5"),
    "xlm-roberta sentencepiece.bpe.model": _plain("xlmr-spm"),
    "deberta-v2 spm.model": _plain("deberta-spm"),
    "deberta-v2 spm.model, lower-cased, split by punctuation": _plain(
        "deberta-spm", do_lower_case=True, split_by_punct=True
    ),
    "deberta-v2 tokenizer.json": _json_of("deberta-spm", "deberta-v2"),
}


def ours(folder: Path):
    problems = Problems(folder)
    hf_config = read_json_file(folder / "config.json", problems)
    tok, _tgt, _desc = folder_tokenizers(folder, hf_config, problems)
    assert not problems, problems.items
    assert tok is not None
    return tok, FAMILY_ROLES.get(hf_config["model_type"], "decoder")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ids_equal_autotokenizers(layout, sources, tmp_path):
    folder = LAYOUTS[layout](sources, tmp_path)
    tok, role = ours(folder)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    typed = [auto.convert_ids_to_tokens(i) for i in sorted(tok.specials.to_ids())][:2]
    for text in [*L.SENTENCES, L.LONG, f"before {' '.join(typed)} after"]:
        expected = auto(text)["input_ids"]
        assert tok.specials.wrap(role, tok.encode(text)[1]) == expected, (layout, text)
    assert len(auto(L.LONG)["input_ids"]) > 200  # nothing was cut, by either


PAIRS = [
    "bert vocab.txt lower-cased",
    "bert tokenizer.json",
    "roberta vocab.json + merges.txt",
    "roberta tokenizer.json",
    "xlm-roberta sentencepiece.bpe.model",
    "bert tokenizer.json with stored padding and truncation",
    "deberta-v2 spm.model",
    "deberta-v2 tokenizer.json",
]


@pytest.mark.parametrize("layout", PAIRS)
def test_sentence_pairs_equal_autotokenizers_ids_and_token_types(layout, sources, tmp_path):
    folder = LAYOUTS[layout](sources, tmp_path)
    tok, _role = ours(folder)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert tok.specials.reads_pairs
    for a, b in zip(L.SENTENCES, reversed(L.SENTENCES), strict=True):
        expected = auto(a, b, return_token_type_ids=True)
        ids, types = tok.specials.wrap_pair(tok.encode(a)[1], tok.encode(b)[1])
        assert ids == expected["input_ids"], (layout, a, b)
        assert types == expected["token_type_ids"], (layout, a, b)
    if layout.startswith("bert"):
        assert 1 in types  # B is segment 1


def test_decoders_read_no_pairs(sources, tmp_path):
    tok, _role = ours(LAYOUTS["gpt2 tokenizer.json"](sources, tmp_path))
    assert not tok.specials.reads_pairs
    with pytest.raises(ValueError):
        tok.specials.wrap_pair([1], [2])


@pytest.mark.parametrize(
    ("layout", "starts_with_bos"),
    [
        ("llama tokenizer.json adding <s>, no add_bos_token", True),
        ("llama tokenizer.json adding <s>, add_bos_token false", True),
        ("llama tokenizer.json no post-processor, add_bos_token true", False),
        ("llama tokenizer.model only", False),
        ("llama tokenizer.model, add_bos_token true", True),
    ],
)
def test_llama_bos_follows_the_post_processor_and_tokenizer_config(layout, starts_with_bos, sources, tmp_path):
    tok, _role = ours(LAYOUTS[layout](sources, tmp_path))
    assert (tok.specials.prefix.get("decoder") == [tok.specials.bos]) is starts_with_bos
    assert tok.specials.bos == 1


def test_stored_padding_and_truncation_are_not_applied(sources, tmp_path):
    tok, role = ours(LAYOUTS["bert tokenizer.json with stored padding and truncation"](sources, tmp_path))
    assert len(tok.specials.wrap(role, tok.encode("Hello, world!")[1])) < 10
    assert len(tok.encode(L.LONG)[1]) > 128
    assert tok.specials.pad not in tok.encode("Hello, world!")[1]


def test_a_sentencepiece_folder_without_sentencepiece_says_how_to_install_it(sources, tmp_path, monkeypatch):
    import builtins

    folder = LAYOUTS["llama tokenizer.model only"](sources, tmp_path)
    real_import = builtins.__import__

    def no_sentencepiece(name, *args, **kwargs):
        if name == "sentencepiece":
            raise ImportError("No module named 'sentencepiece'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sentencepiece)
    problems = Problems(folder)
    tok, _tgt, _desc = folder_tokenizers(folder, {"model_type": "llama"}, problems)
    assert tok is None and len(problems.items) == 1
    assert 'pip install "attnlab[hf]"' in problems.items[0] and "\n" not in problems.items[0]


def test_a_sentencepiece_tokenizer_survives_its_json(sources, tmp_path):
    from attnlab.engine.tokenizer_json import tokenizer_from_json

    tok, role = ours(LAYOUTS["xlm-roberta sentencepiece.bpe.model"](sources, tmp_path))
    again = tokenizer_from_json(tok.to_json())
    for text in L.SENTENCES:
        assert again.specials.wrap(role, again.encode(text)[1]) == tok.specials.wrap(role, tok.encode(text)[1])
    assert again.specials.pair == tok.specials.pair and again.specials.reads_pairs


def test_a_post_processor_that_cannot_be_run_is_one_problem(sources, tmp_path):
    folder = LAYOUTS["bert tokenizer.json"](sources, tmp_path)
    data = L.json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    data["post_processor"] = {  # a template naming a special token with no id: the library refuses to run it
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[NOPE]", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {},
    }
    L.write_json(folder / "tokenizer.json", data)
    problems = Problems(folder)
    tok, _tgt, _desc = folder_tokenizers(folder, {"model_type": "bert"}, problems)
    assert tok is None and len(problems.items) == 1 and "\n" not in problems.items[0]


@pytest.mark.parametrize(
    "layout",
    ["deberta-v2 spm.model", "deberta-v2 spm.model, lower-cased, split by punctuation", "deberta-v2 tokenizer.json"],
)
def test_deberta_spm_is_read_as_transformers_reads_it(layout, sources, tmp_path):
    """transformers 5 reads spm.model with DebertaV2Tokenizer's own normaliser (NFC, not SentencePiece's NFKC:
    'ﬁ' and '①' stay unknown) and adds [MASK] after the pieces; attnlab does the same."""
    tok, role = ours(LAYOUTS[layout](sources, tmp_path))
    auto = transformers.AutoTokenizer.from_pretrained(str(LAYOUTS[layout](sources, tmp_path / "again")))
    assert role == "encoder-only" and tok.specials.mask == auto.mask_token_id
    for text in ["x [MASK] y", "[x]", "a  b\tc\n", "Ünïcödé ﬁ ①", "  leading and trailing  "]:
        assert tok.specials.wrap(role, tok.encode(text)[1]) == auto(text)["input_ids"], (layout, text)
