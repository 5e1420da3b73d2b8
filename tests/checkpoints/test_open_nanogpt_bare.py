"""Opening checkpoints attnlab did not write: nanoGPT's ckpt.pt (checked against a GPT written as nanoGPT
writes it) with its meta.pkl, and bare nn.Transformer / nn.TransformerEncoder state dicts with what the user
says about them (checked against PyTorch's own forward)."""

from __future__ import annotations

import os
import pickle

import pytest
import torch

import attnlab
from attnlab.checkpoints import CheckpointError, load_checkpoint
from tests.support.nanogpt_reference import train_py_checkpoint

ARGS = dict(n_layer=2, n_head=2, n_embd=16, block_size=24, vocab_size=11, dropout=0.0)
TEXT = "to be, or not"
CHARS = sorted(set("to be, or not\n") | {"!"})  # 11 characters, like shakespeare_char's vocabulary


def write_meta(folder, chars=CHARS):
    meta = {"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in enumerate(chars)}}
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump(meta, f)


@pytest.mark.parametrize("bias,compiled", [(True, False), (False, True)])
def test_nanogpt_checkpoint_gives_the_gpt_logits(tmp_path, bias, compiled):
    gpt, ckpt = train_py_checkpoint({**ARGS, "bias": bias}, seed=1, compiled=compiled)
    torch.save(ckpt, tmp_path / "ckpt.pt")
    write_meta(tmp_path)
    model = attnlab.load(tmp_path)  # the folder: its ckpt.pt, with meta.pkl beside it
    t = model.trace(TEXT)
    assert t["tgt.tokens"] == list(TEXT)  # characters, and no <s> forced in front
    ids = torch.tensor([[CHARS.index(c) for c in TEXT]])
    assert t["tgt.ids"].tolist() == ids[0].tolist()
    with torch.no_grad():
        expected = gpt.eval()(ids)[0]  # [T, V]
    assert torch.allclose(t["logits"], expected, atol=1e-5), (t["logits"] - expected).abs().max()
    assert model.metadata["settings"]["n_head"] == {"value": 2, "source": "model_args"}


def test_nanogpt_without_vocabulary_shows_ids_and_says_so(tmp_path):
    gpt, ckpt = train_py_checkpoint({**ARGS, "bias": True}, seed=2)
    torch.save(ckpt, tmp_path / "ckpt.pt")
    model = load_checkpoint(tmp_path / "ckpt.pt")
    assert any("no meta.pkl" in n for n in model.metadata["notices"]) and "#0" in model.metadata["notice"]
    t = model.trace("#3 #1 #4")
    assert t["tgt.tokens"] == ["#3", "#1", "#4"]
    with torch.no_grad():
        assert torch.allclose(t["logits"], gpt.eval()(torch.tensor([[3, 1, 4]]))[0], atol=1e-5)


def test_malicious_meta_pkl_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    _, ckpt = train_py_checkpoint({**ARGS, "bias": True})
    torch.save(ckpt, tmp_path / "ckpt.pt")
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps({"itos": Evil()}))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / "ckpt.pt")
    assert "meta.pkl" in str(info.value) and "refused" in str(info.value) and "posix.mkdir" in str(info.value)
    assert not marker.exists()


def test_nanogpt_with_a_tokenizer_the_user_names(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(CHARS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="!"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.save(str(tmp_path / "tokenizer.json"))
    _, ckpt = train_py_checkpoint({**ARGS, "bias": True})
    torch.save(ckpt, tmp_path / "ckpt.pt")
    model = load_checkpoint(tmp_path / "ckpt.pt", tokenizer=tmp_path / "tokenizer.json")
    assert model.trace("to be")["tgt.ids"].tolist() == [vocab[c] for c in "to be"]


# ---- bare nn.Transformer -----------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("norm,activation", [("post", "relu"), ("pre", "gelu")])
def test_bare_nn_transformer_with_user_settings_matches_pytorch(tmp_path, norm, activation):
    torch.manual_seed(0)
    reference = torch.nn.Transformer(
        d_model=24,
        nhead=3,
        num_encoder_layers=2,
        num_decoder_layers=1,
        dim_feedforward=40,
        dropout=0.0,
        batch_first=True,
        activation=activation,
        norm_first=norm == "pre",
    ).eval()
    torch.save(reference.state_dict(), tmp_path / "bare.pt")
    model = load_checkpoint(tmp_path / "bare.pt", heads=3, norm=norm, activation=activation)
    cfg = model.config
    assert (cfg.n_heads, cfg.norm_first, cfg.activation, cfg.d_ff) == (3, norm == "pre", activation, 40)
    assert any("n_heads 3 (given)" in n and "assumed" in n for n in model.metadata["notices"])
    assert any("random embeddings" in n for n in model.metadata["notices"])
    t = model.trace("the black cat", "le chat")
    assert any("n_heads 3 (given)" in n for n in t.notices)  # every run says what was assumed
    src, tgt = t["src.input"][None], t["tgt.input"][None]  # [1, S, d], [1, T, d]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
    with torch.no_grad():
        memory = reference.encoder(src)
        out = reference.decoder(tgt, memory, tgt_mask=causal)
    assert torch.allclose(t["enc.out"], memory[0], atol=1e-5)
    assert torch.allclose(t["dec.out"], out[0], atol=1e-5)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_bare_transformer_encoder_defaults_are_assumed_and_said(tmp_path):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=8, dim_feedforward=32, dropout=0.0, batch_first=True)
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    torch.save(encoder.state_dict(), tmp_path / "enc.pt")
    model = load_checkpoint(tmp_path / "enc.pt")
    assert model.config.arch == "encoder-only" and model.config.n_heads == 8
    assert any("n_heads 8 (assumed" in n and "norm post (assumed" in n for n in model.metadata["notices"])
    assert model.metadata["settings"]["activation"] == {"value": "relu", "source": "assumed"}
    t = model.trace("the cat")
    with torch.no_grad():
        assert torch.allclose(t["enc.out"], encoder(t["src.input"][None])[0], atol=1e-5)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_bare_state_dict_heads_that_do_not_divide_are_refused(tmp_path):
    reference = torch.nn.Transformer(
        d_model=24, nhead=3, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8, batch_first=True
    )
    torch.save(reference.state_dict(), tmp_path / "bare.pt")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / "bare.pt", heads=5)
    assert "not divisible by 5 heads" in str(info.value) and "--heads" in str(info.value)


# ---- the CLI ---------------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_cli_flags_describe_a_bare_state_dict(tmp_path, capsys):
    import json

    import numpy as np

    from attnlab.cli import main

    torch.manual_seed(2)
    reference = torch.nn.Transformer(
        d_model=16,
        nhead=2,
        num_encoder_layers=1,
        num_decoder_layers=1,
        dim_feedforward=24,
        dropout=0.0,
        batch_first=True,
    )
    torch.save(reference.state_dict(), tmp_path / "bare.pt")
    assert (
        main(["info", str(tmp_path / "bare.pt"), "--heads", "2", "--norm", "pre", "--activation", "gelu", "--json"])
        == 0
    )
    info = json.loads(capsys.readouterr().out)
    assert (info["config"]["n_heads"], info["config"]["norm_first"], info["config"]["activation"]) == (2, True, "gelu")
    assert info["metadata"]["settings"]["n_heads"] == {"value": 2, "source": "given"}
    out = tmp_path / "t.npz"
    assert (
        main(
            [
                "trace",
                "--checkpoint",
                str(tmp_path / "bare.pt"),
                "--heads",
                "2",
                "--src",
                "the cat",
                "--tgt",
                "le",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert np.load(out)["enc.0.self.weights"].shape[0] == 2
    assert main(["info", str(tmp_path / "bare.pt"), "--heads", "5"]) == 2
    assert "not divisible by 5 heads" in capsys.readouterr().err


def test_an_opened_nanogpt_generates_and_resaves_as_an_attnlab_checkpoint(tmp_path):
    from attnlab.checkpoints import save_checkpoint

    _, ckpt = train_py_checkpoint({**ARGS, "bias": True}, seed=3)
    torch.save(ckpt, tmp_path / "ckpt.pt")
    write_meta(tmp_path)
    model = attnlab.load(tmp_path)
    steps = list(model.generate("to be", max_new_tokens=4))
    assert len(steps) == 4 and steps[-1].info["generated"].startswith("to be")
    assert len(steps[-1].info["generated"]) == len("to be") + 4  # one character per step, no <s> anywhere
    copy = load_checkpoint(save_checkpoint(model, tmp_path / "copy.safetensors"))
    a, b = model.trace(TEXT), copy.trace(TEXT)
    assert a["tgt.tokens"] == b["tgt.tokens"] and torch.equal(a["logits"], b["logits"])


def test_prompts_up_to_the_block_size_are_read_and_longer_ones_truncated_with_a_notice(tmp_path):
    _, ckpt = train_py_checkpoint({**ARGS, "bias": True}, seed=5)
    torch.save(ckpt, tmp_path / "ckpt.pt")
    write_meta(tmp_path)
    model = attnlab.load(tmp_path)
    full = model.trace("to be or not to be, to ")  # 23 characters: all fit in block_size 24
    assert len(full["tgt.tokens"]) == 23 and not full.notices
    long = model.trace("to be or not to be, to be or not")  # 32
    assert len(long["tgt.tokens"]) == 24
    assert any("reads at most 24" in n and "last 8 were dropped" in n for n in long.notices)


def test_a_tokenizer_path_that_is_not_one_is_reported(tmp_path):
    _, ckpt = train_py_checkpoint({**ARGS, "bias": True})
    torch.save(ckpt, tmp_path / "ckpt.pt")
    (tmp_path / "notes.json").write_text("{}")
    for bad, words in ((tmp_path / "notes.json", "is not a tokenizer.json"), (tmp_path / "nowhere", "nothing at")):
        with pytest.raises(CheckpointError) as info:
            load_checkpoint(tmp_path / "ckpt.pt", tokenizer=bad)
        assert words in str(info.value)
