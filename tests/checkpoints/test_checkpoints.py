"""Checkpoints: the .safetensors round trip, one readable CheckpointError for every kind of damage, safe .pt
loading (a malicious pickle runs nothing), nn.Transformer import, random and bundled models."""

import dataclasses
import json
import os
import pickle
import pickletools

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from attnlab.checkpoints import bundled as bundled_module
from attnlab.checkpoints import load_bundled, load_checkpoint, random_model, save_checkpoint
from attnlab.checkpoints.bundled import default_tokenizer
from attnlab.checkpoints.errors import CheckpointError
from attnlab.engine.config import ModelConfig
from attnlab.engine.tokenizer import WordTokenizer

TINY = ModelConfig(d_model=16, n_heads=4, d_ff=32, n_encoder_layers=1, n_decoder_layers=2, max_len=32)
SRC, TGT = "the black cat sat on the mat", "le chat noir"
TOK = WordTokenizer.train([SRC, TGT, "the dog sees a bird", "le chien voit un oiseau"])


def tiny(**changes):
    return random_model(dataclasses.replace(TINY, **changes), seed=3, tokenizer=TOK)


def tensors_equal(a, b):
    assert list(a) == list(b) and len(a) > 20
    return all(torch.equal(a[n], b[n]) if isinstance(a[n], torch.Tensor) else a[n] == b[n] for n in a)


@pytest.fixture
def saved(tmp_path):
    model = tiny()
    model.metadata["trained_steps"] = 12
    path = save_checkpoint(model, tmp_path / "tiny.safetensors")
    return model, path


def rewrite(path, out, change_tensors=None, change_meta=None):
    """Copy a checkpoint with its tensors and/or metadata edited (as a user's bad converter might)."""
    with safe_open(str(path), "pt") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    if change_tensors:
        change_tensors(tensors)
    if change_meta:
        change_meta(meta)
    save_file(tensors, str(out), metadata=meta)
    return out


def load_error(path) -> str:
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    return str(info.value)


# ---- round trips ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"arch": "decoder-only", "positional": "learned", "norm_first": True, "final_norm": True},
        {"share_embeddings": True, "tie_output": False, "positional": "rotary", "activation": "gelu"},
    ],
)
def test_round_trip_gives_identical_traces(tmp_path, changes):
    model = tiny(**changes)
    model.metadata["card"] = {"data": "toy", "accuracy": 0.5}
    loaded = load_checkpoint(save_checkpoint(model, tmp_path / "m.safetensors"))
    assert loaded.config == model.config and loaded.name == model.name
    assert loaded.metadata == {"random": True, "seed": 3, "card": {"data": "toy", "accuracy": 0.5}}
    assert loaded.tgt_tokenizer.vocab == TOK.vocab
    assert tensors_equal(model.trace(SRC, TGT), loaded.trace(SRC, TGT))


def test_shared_weights_are_stored_once_and_stay_shared(tmp_path):
    model = tiny(share_embeddings=True)
    path = save_checkpoint(model, tmp_path / "m.safetensors")
    with safe_open(str(path), "pt") as f:
        names = set(f.keys())
    assert "src_embed.weight" in names and "tgt_embed.weight" not in names and "out_proj.weight" not in names
    loaded = load_checkpoint(path)
    assert loaded.module.tgt_embed.weight is loaded.module.src_embed.weight


def test_loading_leaves_the_global_random_state_alone(saved):
    before = torch.random.get_rng_state()
    load_checkpoint(saved[1])
    assert torch.equal(before, torch.random.get_rng_state())


def test_save_refuses_other_suffixes_and_missing_folders(tmp_path, saved):
    with pytest.raises(CheckpointError, match="ending in .safetensors"):
        save_checkpoint(saved[0], tmp_path / "m.pt")
    with pytest.raises(CheckpointError, match="Cannot save"):
        save_checkpoint(saved[0], tmp_path / "no" / "such" / "m.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.safetensors"]  # no temp files left over


# ---- damaged files: one CheckpointError naming the problem ------------------------------------------------
def test_missing_file_and_folder(tmp_path):
    assert "no file at that path" in load_error(tmp_path / "absent.safetensors")
    assert "folder" in load_error(tmp_path)


def test_garbage_is_not_a_safetensors_file(tmp_path):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"this is a text file, not a model\n" * 20)
    assert "not a safetensors file" in load_error(junk)
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\x01\x02")
    assert "not a safetensors file" in load_error(short)


def test_truncated_file(tmp_path, saved):
    data = saved[1].read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: len(data) - 100])
    msg = load_error(cut)
    assert "truncated" in msg and f"only {len(data) - 100 - 8 - int.from_bytes(data[:8], 'little')}" in msg
    cut.write_bytes(data[:50])  # cut inside the header
    assert "truncated" in load_error(cut)


def test_flipped_header_bytes(tmp_path, saved):
    data = bytearray(saved[1].read_bytes())
    for i in range(40, 48):  # inside the JSON header: the bytes become invalid UTF-8 / JSON
        data[i] ^= 0xFF
    bad = tmp_path / "flipped.safetensors"
    bad.write_bytes(bytes(data))
    assert "header is unreadable" in load_error(bad)


def test_missing_unexpected_and_misshapen_tensors(tmp_path, saved):
    def drop(t):
        del t["decoder.1.ffn.lin2.bias"]

    msg = load_error(rewrite(saved[1], tmp_path / "a.safetensors", drop))
    assert "missing" in msg and "decoder.1.ffn.lin2.bias" in msg

    def add(t):
        t["decoder.7.extra.weight"] = torch.zeros(3)

    msg = load_error(rewrite(saved[1], tmp_path / "b.safetensors", add))
    assert "does not belong" in msg and "decoder.7.extra.weight" in msg

    def reshape(t):
        t["encoder.0.self_attn.w_k.weight"] = torch.zeros(16, 8)

    msg = load_error(rewrite(saved[1], tmp_path / "c.safetensors", reshape))
    assert "encoder.0.self_attn.w_k.weight: expected [16, 16] got [16, 8]" in msg


def test_nan_and_inf_values_are_named(tmp_path, saved):
    def poison(t):
        t["encoder.0.norm1.weight"][3] = float("nan")
        t["tgt_embed.weight"][0, 0] = float("inf")

    msg = load_error(rewrite(saved[1], tmp_path / "nan.safetensors", poison))
    assert "NaN or infinite" in msg and "encoder.0.norm1.weight" in msg and "tgt_embed.weight" in msg
    assert "decoder.0" not in msg


def test_config_problems(tmp_path, saved):
    def heads(m):
        m["config"] = json.dumps(json.loads(m["config"]) | {"d_model": 30})

    msg = load_error(rewrite(saved[1], tmp_path / "a.safetensors", change_meta=heads))
    assert "d_model 30 is not divisible by n_heads 4" in msg

    def bad_json(m):
        m["config"] = "{d_model: 16"

    assert "config is not valid JSON" in load_error(rewrite(saved[1], tmp_path / "b.safetensors", change_meta=bad_json))

    def wrong_type(m):
        m["config"] = json.dumps(json.loads(m["config"]) | {"n_heads": "four"})

    assert "n_heads must be a int" in load_error(rewrite(saved[1], tmp_path / "c.safetensors", change_meta=wrong_type))

    def no_config(m):
        del m["config"]

    msg = load_error(rewrite(saved[1], tmp_path / "d.safetensors", change_meta=no_config))
    assert "no model config" in msg


def test_metadata_format_and_plain_safetensors(tmp_path, saved):
    def future(m):
        m["format"] = "attnlab/9"

    assert "'attnlab/9'" in load_error(rewrite(saved[1], tmp_path / "a.safetensors", change_meta=future))
    plain = tmp_path / "plain.safetensors"
    save_file({"w": torch.zeros(2, 2)}, str(plain))
    assert "no attnlab metadata" in load_error(plain)


def test_tokenizer_problems(tmp_path, saved):
    def garbled(m):
        m["src_tokenizer"] = '{"kind": "word", "vocab": ['

    msg = load_error(rewrite(saved[1], tmp_path / "a.safetensors", change_meta=garbled))
    assert "source tokenizer" in msg and "unreadable" in msg

    def smaller(m):
        m["tgt_tokenizer"] = WordTokenizer.train(["le chat"]).to_json()

    msg = load_error(rewrite(saved[1], tmp_path / "b.safetensors", change_meta=smaller))
    assert f"target tokenizer has 6 tokens but the config says the target vocabulary has {TOK.vocab_size}" in msg


def test_every_problem_is_listed_at_once(tmp_path, saved):
    def tensors(t):
        del t["encoder.0.ffn.lin1.weight"]
        t["decoder.0.norm2.bias"][0] = float("nan")

    def meta(m):
        m["tgt_tokenizer"] = "not json"

    msg = load_error(rewrite(saved[1], tmp_path / "three.safetensors", tensors, meta))
    assert "3 problems" in msg
    assert "encoder.0.ffn.lin1.weight" in msg and "decoder.0.norm2.bias" in msg and "target tokenizer" in msg


def test_missing_tokenizer_gets_a_generic_one_with_a_notice(tmp_path, saved):
    def strip(m):
        del m["src_tokenizer"], m["tgt_tokenizer"]

    model = load_checkpoint(rewrite(saved[1], tmp_path / "a.safetensors", change_meta=strip))
    assert model.src_tokenizer.vocab[:6] == ["<pad>", "<s>", "</s>", "<unk>", "tok4", "tok5"]
    assert model.src_tokenizer.vocab_size == TOK.vocab_size
    assert any("no tokenizer" in n for n in model.metadata["notices"])
    assert model.trace("tok5 tok6", "tok7")["src.ids"].tolist() == [5, 6, 2]


# ---- .pt files -----------------------------------------------------------------------------------------
def pt_contents(model, nested=True):
    state = {k: v.detach().clone() for k, v in model.module.checkpoint_tensors().items()}
    extras = {
        "config": dataclasses.asdict(model.config),
        "src_tokenizer": model.src_tokenizer.to_json(),
        "tgt_tokenizer": model.tgt_tokenizer.to_json(),
        "name": "from-pt",
        "metadata": {"epochs": 3},
    }
    return {"state_dict": state, **extras} if nested else {**state, **extras, "epoch": 3}


@pytest.mark.parametrize("nested", [True, False])
def test_weights_only_pt_loads(tmp_path, nested):
    model = tiny()
    path = tmp_path / "m.pt"
    torch.save(pt_contents(model, nested), path)
    loaded = load_checkpoint(path)
    assert loaded.name == "from-pt" and loaded.metadata["epochs"] == 3
    assert tensors_equal(model.trace(SRC, TGT), loaded.trace(SRC, TGT))


class RunsShell:
    """Unpickling this would run a shell command that creates a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "MARKER"
    state = pt_contents(tiny())
    raw = tmp_path / "raw.pt"  # a bare pickle stream (protocol 2 names the global it wants)
    raw.write_bytes(pickle.dumps({"config": state["config"], "evil": RunsShell(marker)}, protocol=2))
    globals_named = [arg for op, arg, _ in pickletools.genops(raw.read_bytes()) if op.name == "GLOBAL"]
    assert globals_named == [f"{os.system.__module__} system"]  # the payload is live: it names os.system
    zipped = tmp_path / "zipped.pth"  # torch.save's zip container around the same payload
    torch.save({**state, "evil": RunsShell(marker)}, zipped)
    for path in (raw, zipped):
        msg = load_error(path)
        assert "refused" in msg and "nothing in it was run" in msg and "system" in msg
    assert not marker.exists()
    # a protocol-4 pickle stream is refused too, before any global is looked at
    raw.write_bytes(pickle.dumps(RunsShell(marker), protocol=4))
    assert "refused" in load_error(raw)
    assert not marker.exists()


def test_pt_that_is_not_a_dict_or_not_a_checkpoint(tmp_path):
    path = tmp_path / "list.pt"
    torch.save([torch.zeros(2)], path)
    assert "holds a list" in load_error(path)
    path.write_bytes(b"\x00garbage" * 10)
    assert "not a PyTorch checkpoint" in load_error(path)
    torch.save({"state_dict": {"w": torch.zeros(2)}}, path)
    assert "no model config" in load_error(path)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("norm_first", [False, True])
def test_nn_transformer_state_dict_matches_pytorch(tmp_path, norm_first):
    cfg = dataclasses.replace(
        TINY,
        n_encoder_layers=2,
        final_norm=True,
        norm_first=norm_first,
        src_vocab_size=TOK.vocab_size,
        tgt_vocab_size=TOK.vocab_size,
    )
    torch.manual_seed(5)
    reference = torch.nn.Transformer(
        d_model=16,
        nhead=4,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dim_feedforward=32,
        dropout=0.0,
        batch_first=True,
        norm_first=norm_first,
    ).eval()
    embeddings = {k: v for k, v in tiny().module.checkpoint_tensors().items() if "embed" in k}
    state = {f"transformer.{k}": v for k, v in reference.state_dict().items()} | embeddings
    path = tmp_path / "torch.pt"
    torch.save({"state_dict": state, "config": dataclasses.asdict(cfg), "tgt_tokenizer": TOK.to_json()}, path)
    model = load_checkpoint(path)
    assert any("nn.Transformer" in n for n in model.metadata["notices"])
    t = model.trace(SRC, TGT)
    src, tgt = t["src.input"][None], t["tgt.input"][None]  # [1, S, d], [1, T, d]
    causal = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
    with torch.no_grad():
        memory = reference.encoder(src)
        out = reference.decoder(tgt, memory, tgt_mask=causal)
    assert torch.allclose(t["enc.out"], memory[0], atol=1e-5)
    assert torch.allclose(t["dec.out"], out[0], atol=1e-5)


# ---- random and bundled models --------------------------------------------------------------------------
def test_random_model_is_seeded_and_sized_by_its_tokenizer():
    a, b, c = (random_model(TINY, seed=s) for s in (1, 1, 2))
    wa, wb, wc = (m.module.encoder[0].self_attn.w_q.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    words = default_tokenizer().vocab
    assert a.config.src_vocab_size == len(words) and a.metadata["random"] is True
    assert 300 <= len(words) <= 500
    for w in ("the", "cat", "sat", "sits", "on", "mat", "black", "dog", "le", "la", "chat", "noir", "chien"):
        assert w in words
    assert "<unk>" not in a.trace("the black cat sits on the mat", "le chat noir")["src.tokens"]


def test_bundled_falls_back_to_a_random_model_when_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(bundled_module, "bundled_path", lambda name: tmp_path / f"{name}.safetensors")
    model = load_bundled("translation")
    assert model.metadata["random"] is True
    assert model.metadata["notice"] == "No bundled model found; showing a randomly initialised one."
    cfg = model.config
    assert (cfg.arch, cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.n_encoder_layers, cfg.n_decoder_layers) == (
        "encoder-decoder",
        128,
        4,
        512,
        3,
        3,
    )
    assert load_bundled("language").config.arch == "decoder-only"
    with pytest.raises(CheckpointError, match="no bundled model called 'poetry'"):
        load_bundled("poetry")


def test_bundled_file_is_loaded_or_its_damage_reported(tmp_path, monkeypatch, saved):
    monkeypatch.setattr(bundled_module, "bundled_path", lambda name: tmp_path / f"{name}.safetensors")
    (tmp_path / "translation.safetensors").write_bytes(saved[1].read_bytes())
    model = load_bundled("translation")
    assert model.metadata["trained_steps"] == 12 and "notice" not in model.metadata
    (tmp_path / "translation.safetensors").write_bytes(saved[1].read_bytes()[:300])
    with pytest.raises(CheckpointError, match="truncated"):
        load_bundled("translation")
