"""A Hugging Face folder's tokenizer end to end (attnlab.load, the CLI): sentence pairs with their token types
through BERT's segment embedding, a SentencePiece-only Llama folder, --tokenizer / tokenizer= for a folder,
long inputs that are cut with a notice, and one-line refusals. References: transformers' AutoTokenizer and
eager forward on tiny random models built here (tests/families/test_hf_models.py's builders)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import attnlab
from attnlab.checkpoints.errors import CheckpointError
from attnlab.engine.live import InputError

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("google.protobuf")  # transformers needs it to read a SentencePiece model alone
from tests.families.test_hf_models import ATOL, saved  # noqa: E402
from tests.support.tokenizer_layouts import sentencepiece_model  # noqa: E402

A, B = "the cat sat on the mat.", "It costs $3.14!"


def test_bert_sentence_pair_has_autotokenizers_ids_types_and_transformers_logits(tmp_path):
    folder, reference = saved(tmp_path, "bert")
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = attnlab.load(folder)
    expected = auto(A, B, return_token_type_ids=True)
    ids, types = torch.tensor([expected["input_ids"]]), torch.tensor([expected["token_type_ids"]])
    with torch.no_grad():
        out = reference(ids, token_type_ids=types, output_hidden_states=True)
        all_zero = reference(ids, output_hidden_states=True)
    assert (out.logits - all_zero.logits).abs().max() > 100 * ATOL  # the segments change the answer
    for src in [(A, B), f"{A} [SEP] {B}", f"{A}[SEP]{B}"]:
        t = model.trace(src)
        assert t["src.ids"].tolist() == expected["input_ids"], src
        assert (t["logits"] - out.logits[0]).abs().max() <= ATOL, src
        table = reference.bert.embeddings.token_type_embeddings.weight
        assert (t["src.type"] - table[types[0]]).abs().max() <= ATOL  # [S, d]: each token's segment row
    assert model.sentence_pair((A, B)) == (A, B)
    assert model.sentence_pair(A) is None


def test_roberta_pair_ids_equal_autotokenizer(tmp_path):
    folder, _reference = saved(tmp_path, "roberta")
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    t = attnlab.load(folder).trace((A, B))
    assert t["src.ids"].tolist() == auto(A, B)["input_ids"]


def test_a_decoder_refuses_a_pair_in_one_line(tmp_path):
    folder, _reference = saved(tmp_path, "gpt2")
    with pytest.raises(InputError, match="one sentence at a time"):
        attnlab.load(folder).trace((A, B))


def llama_spm_folder(tmp_path, **tok_config):
    """A tiny Llama whose only tokenizer file is tokenizer.model."""
    tmp_path.mkdir(exist_ok=True)
    folder = sentencepiece_model(tmp_path, "tokenizer.model", "llama")
    if tok_config:
        (folder / "tokenizer_config.json").write_text(json.dumps(tok_config))
    cfg = transformers.LlamaConfig(
        vocab_size=400,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    reference = transformers.LlamaForCausalLM(cfg).eval()
    reference.save_pretrained(str(folder))
    return folder, reference


@pytest.mark.parametrize("add_bos", [True, False])
def test_llama_with_only_tokenizer_model_reads_its_ids_and_runs(tmp_path, add_bos):
    folder, reference = llama_spm_folder(tmp_path, add_bos_token=add_bos)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = attnlab.load(folder)
    assert "tokenizer.model (SentencePiece)" in model.metadata["tokenizer"]
    text = "Café déjà vu, the lazy dog 😀"
    t = model.trace(text)
    ids = auto(text)["input_ids"]
    assert t["tgt.ids"].tolist() == ids and (ids[0] == 1) is add_bos
    with torch.no_grad():
        logits = reference(torch.tensor([ids])).logits[0]
    assert (t["logits"] - logits).abs().max() <= ATOL
    assert not any("no tokenizer" in n for n in [*model.metadata.get("notices", []), *t.notices])


def test_tokenizer_argument_replaces_a_folders_own(tmp_path, capsys):
    folder, _reference = llama_spm_folder(tmp_path / "model")
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    (other / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True}))
    (folder / "tokenizer.model").unlink()  # the model folder's own: none
    assert attnlab.load(folder).tgt_tokenizer.kind == "numbers"
    model = attnlab.load(folder, tokenizer=other)
    assert model.trace("the lazy dog")["tgt.ids"].tolist()[0] == 1  # read as the other folder's files say
    from attnlab.cli import main

    assert main(["info", str(folder), "--tokenizer", str(other)]) == 0
    assert "spm-model" in capsys.readouterr().out
    with pytest.raises(CheckpointError, match="nothing at that path"):
        attnlab.load(folder, tokenizer=tmp_path / "missing")


def test_a_long_input_is_cut_with_a_notice_in_the_api_and_the_cli(tmp_path, capsys):
    folder, _reference = saved(tmp_path, "bert")
    model = attnlab.load(folder)
    long = " ".join(["the cat sat on the mat."] * 30)
    t = model.trace(long)
    assert t["src.ids"].shape[0] == 64
    assert any("reads at most 62" in n and "were dropped" in n for n in t.notices)
    pair = model.trace((long, long))
    assert pair["src.ids"].shape[0] == 64
    assert any("the first 64 are used" in n for n in pair.notices)
    from attnlab.cli import main

    assert main(["trace", "--checkpoint", str(folder), "--src", long, "--out", str(tmp_path / "t.npz")]) == 0
    assert "reads at most 62" in capsys.readouterr().out


def test_an_option_refusal_is_one_line_naming_config_json_once(tmp_path):
    folder, _reference = saved(tmp_path, "llama")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_act": "made_up_act"}))
    with pytest.raises(CheckpointError) as info:
        attnlab.load(folder)
    message = str(info.value)
    assert message.count("config.json") == 1 and "made_up_act" in message
    assert "opens these" not in message and "\n" not in message.strip()


def test_an_unknown_model_type_lists_the_supported_ones(tmp_path):
    folder, _reference = saved(tmp_path, "gpt2")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "made_up_type"}))
    with pytest.raises(CheckpointError) as info:
        attnlab.load(folder)
    assert "made_up_type" in str(info.value) and "gpt2" in str(info.value) and "llama" in str(info.value)
