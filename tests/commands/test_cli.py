"""The init, info and trace sub-commands through attnlab.cli.main, and their clear exits on bad input."""

import json

import numpy as np
import pytest

from attnlab.checkpoints import bundled as bundled_module
from attnlab.checkpoints import load_checkpoint
from attnlab.cli import main

TINY = ["--d-model", "16", "--heads", "4", "--d-ff", "32", "--enc-layers", "1", "--dec-layers", "2", "--max-len", "32"]


@pytest.fixture
def ckpt(tmp_path, capsys):
    path = tmp_path / "tiny.safetensors"
    assert main(["init", *TINY, "--seed", "7", "--out", str(path)]) == 0
    capsys.readouterr()
    return path


def test_init_writes_a_loadable_model_and_summarises_it(tmp_path, capsys):
    path = tmp_path / "m.safetensors"
    assert (
        main(
            [
                "init",
                *TINY,
                "--arch",
                "decoder-only",
                "--norm",
                "pre",
                "--positional",
                "rotary",
                "--activation",
                "gelu",
                "--out",
                str(path),
            ]
        )
        == 0
    )
    line = capsys.readouterr().out.strip()
    model = load_checkpoint(path)
    cfg = model.config
    got = (
        cfg.arch,
        cfg.d_model,
        cfg.n_heads,
        cfg.d_ff,
        cfg.n_decoder_layers,
        cfg.norm_first,
        cfg.positional,
        cfg.activation,
        cfg.max_len,
    )
    assert got == ("decoder-only", 16, 4, 32, 2, True, "rotary", "gelu", 32)
    n_params = sum(t.numel() for t in model.module.checkpoint_tensors().values())
    assert "\n" not in line and f"{n_params:,} parameters" in line and "decoder-only" in line
    assert model.metadata["random"] is True


def test_init_seed_decides_the_weights(tmp_path, capsys):
    paths = [tmp_path / f"{i}.safetensors" for i in range(3)]
    for path, seed in zip(paths, (1, 1, 2), strict=True):
        assert main(["init", *TINY, "--seed", str(seed), "--out", str(path)]) == 0
    a, b, c = (load_checkpoint(p).module.decoder[1].ffn.lin1.weight for p in paths)
    assert (a == b).all() and not (a == c).all()


def test_info_text_and_json(ckpt, capsys):
    assert main(["info", str(ckpt)]) == 0
    text = capsys.readouterr().out
    assert "encoder-decoder" in text and "word, " in text and "decoder.1.cross_attn.w_q.weight" in text
    assert main(["info", str(ckpt), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    model = load_checkpoint(ckpt)
    assert info["parameters"] == sum(t.numel() for t in model.module.checkpoint_tensors().values())
    assert info["tensors"]["encoder.0.ffn.lin1.weight"] == [32, 16]
    assert info["tokenizers"]["src"] == {"kind": "word", "vocab_size": model.src_tokenizer.vocab_size}
    assert info["config"]["n_decoder_layers"] == 2 and info["metadata"]["seed"] == 7


def test_init_info_trace_round_trip(ckpt, tmp_path, capsys):
    out = tmp_path / "trace.npz"
    assert (
        main(
            [
                "trace",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the black cat sat on the mat",
                "--tgt",
                "le chat noir",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    with np.load(out, allow_pickle=False) as npz:
        names = set(npz.files)
        assert f"Saved {len(names) - 1} trace entries" in printed  # all but __notices__
        S, T = 8, 4  # 7 words + </s>; <s> + 3 words
        assert list(npz["src.tokens"]) == ["the", "black", "cat", "sat", "on", "the", "mat", "</s>"]
        assert npz["enc.0.self.weights"].shape == (4, S, S)
        assert npz["dec.1.self.weights"].shape == (4, T, T) and npz["dec.1.cross.weights"].shape == (4, T, S)
        assert np.allclose(npz["dec.0.cross.weights"].sum(-1), 1.0, atol=1e-5)
        assert np.all(npz["dec.0.self.weights"][:, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)
        assert npz["probs"].shape[0] == T and npz["src.ids"].dtype == np.int64
    trace = load_checkpoint(ckpt).trace("the black cat sat on the mat", "le chat noir")
    assert names - {"__notices__"} == set(trace.names())


def test_trace_toggles_reach_the_run(ckpt, tmp_path, capsys):
    out = tmp_path / "t.npz"
    assert (
        main(
            [
                "trace",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the cat",
                "--tgt",
                "le chat noir",
                "--heads",
                "2",
                "--no-causal-mask",
                "--no-scale",
                "--norm",
                "pre",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with np.load(out, allow_pickle=False) as npz:
        w = npz["dec.0.self.weights"]
        assert w.shape == (2, 4, 4) and np.all(w[:, 0, 1:] > 0)  # looks ahead
        assert np.array_equal(npz["enc.0.self.scores"], npz["enc.0.self.scaled"])  # no division by sqrt(dk)
        assert "enc.0.norm1.in" in npz.files  # pre-norm records the norm before the sub-layer


def test_trace_generate_saves_the_last_step(ckpt, tmp_path, capsys):
    out = tmp_path / "g.npz"
    assert main(["trace", "--checkpoint", str(ckpt), "--src", "the cat", "--generate", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    generated = printed.splitlines()[0].removeprefix("Generated: ")
    with np.load(out, allow_pickle=False) as npz:
        dec_tokens = list(npz["tgt.tokens"])
    # the last step's decoder input is <s> plus every generated token but the last one (or all, if </s> came)
    assert dec_tokens[0] == "<s>" and 1 <= len(dec_tokens) <= 4
    assert " ".join(dec_tokens[1:]) == " ".join(generated.split()[: len(dec_tokens) - 1])


def test_trace_defaults_to_the_bundled_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bundled_module, "bundled_path", lambda name: tmp_path / f"{name}.safetensors")
    out = tmp_path / "b.npz"
    assert main(["trace", "--src", "the cat", "--tgt", "le", "--out", str(out)]) == 0
    assert "No bundled model found" in capsys.readouterr().out
    with np.load(out, allow_pickle=False) as npz:
        assert npz["enc.2.self.weights"].shape == (4, 3, 3)


# ---- bad input: exit 2, a message, no traceback ------------------------------------------------------------
def assert_clean_failure(code, capsys, *phrases):
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    for phrase in phrases:
        assert phrase in err


def test_bad_checkpoints_exit_2(tmp_path, capsys):
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"definitely not a model" * 3)
    assert_clean_failure(main(["info", str(junk)]), capsys, "not a safetensors file")
    assert_clean_failure(
        main(
            [
                "trace",
                "--checkpoint",
                str(tmp_path / "none.safetensors"),
                "--src",
                "x",
                "--out",
                str(tmp_path / "t.npz"),
            ]
        ),
        capsys,
        "no file at that path",
    )
    assert not (tmp_path / "t.npz").exists()


def test_bad_options_exit_2(ckpt, tmp_path, capsys):
    out = str(tmp_path / "t.npz")
    assert_clean_failure(
        main(["trace", "--checkpoint", str(ckpt), "--src", "x", "--heads", "5", "--out", out]),
        capsys,
        "5 heads do not divide d_model 16",
    )
    assert_clean_failure(
        main(["trace", "--checkpoint", str(ckpt), "--src", "x", "--temperature", "0", "--out", out]),
        capsys,
        "temperature must be a positive number",
    )
    assert_clean_failure(
        main(["trace", "--checkpoint", str(ckpt), "--src", "x", "--generate", "0", "--out", out]),
        capsys,
        "--generate needs a positive number",
    )
    assert_clean_failure(
        main(["trace", "--checkpoint", str(ckpt), "--src", "x", "--out", str(tmp_path / "no" / "dir" / "t.npz")]),
        capsys,
        "cannot write",
    )
    with pytest.raises(SystemExit) as exit_info:  # argparse: --tgt and --generate together
        main(["trace", "--src", "x", "--tgt", "y", "--generate", "2", "--out", out])
    assert exit_info.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_bad_init_exits_2_and_keeps_existing_files(ckpt, tmp_path, capsys):
    before = ckpt.read_bytes()
    assert_clean_failure(main(["init", "--out", str(ckpt)]), capsys, "already exists", "--force")
    assert ckpt.read_bytes() == before
    new = tmp_path / "new.safetensors"
    assert_clean_failure(
        main(["init", "--d-model", "30", "--heads", "4", "--out", str(new)]),
        capsys,
        "d_model 30 is not divisible by n_heads 4",
    )
    assert_clean_failure(main(["init", "--out", str(tmp_path / "m.pt")]), capsys, ".safetensors")
    assert not new.exists() and not (tmp_path / "m.pt").exists()
    with pytest.raises(SystemExit) as exit_info:
        main(["init", "--arch", "recurrent", "--out", str(new)])
    assert exit_info.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_trace_ablate_and_no_projections_reach_the_run(ckpt, tmp_path, capsys):
    out = tmp_path / "t.npz"
    assert (
        main(
            [
                "trace",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the cat",
                "--tgt",
                "le chat",
                "--ablate",
                "enc.0.self:2:zero",
                "--ablate",
                "dec.1.cross:0:mean",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with np.load(out, allow_pickle=False) as npz:
        assert np.all(npz["enc.0.self.concat"][:, 8:12] == 0) and np.any(npz["enc.0.self.concat"][:, :8] != 0)
        context = npz["dec.1.cross.context"][0]  # [T, dk]: every position holds the head's mean
        assert np.allclose(context, context[:1])
    plain = tmp_path / "p.npz"
    assert (
        main(
            [
                "trace",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the cat",
                "--tgt",
                "le chat",
                "--no-projections",
                "--out",
                str(plain),
            ]
        )
        == 0
    )
    with np.load(plain, allow_pickle=False) as npz:
        assert np.array_equal(npz["enc.0.self.concat"], npz["enc.0.self.out"])  # no W_O


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("enc.0.self:9:zero", "this run has 4 heads"),
        ("enc.3.self:0", "has 1 layers"),
        ("enc.0.self:one", "SITE:HEAD[:MODE]"),
    ],
)
def test_bad_ablations_exit_2(ckpt, tmp_path, capsys, spec, words):
    assert_clean_failure(
        main(["trace", "--checkpoint", str(ckpt), "--src", "x", "--ablate", spec, "--out", str(tmp_path / "t.npz")]),
        capsys,
        words,
    )


def test_trace_says_so_when_the_gpu_runs_out_of_memory_while_saving(ckpt, tmp_path, capsys, monkeypatch):
    from attnlab.engine.trace import Trace

    def full_gpu(self, path, plan=None):
        raise RuntimeError("CUDA out of memory. Tried to allocate 1.50 GiB")

    monkeypatch.setattr(Trace, "save_npz", full_gpu)
    out = tmp_path / "t.npz"
    code = main(["trace", "--checkpoint", str(ckpt), "--src", "the cat", "--tgt", "le", "--out", str(out)])
    assert_clean_failure(code, capsys, "GPU ran out of memory", "--device cpu")
    assert not out.exists()


def test_info_says_a_quantized_files_dequantization_in_one_sentence(tmp_path, capsys):
    """`attnlab info model.gguf`: the text names what was done in the loader's sentence; --json keeps the fact."""
    from tests.support.gguf_tiny import write_gguf

    path = write_gguf(tmp_path, "llama", "Q4_1")
    assert main(["info", str(path), "--json"]) == 0
    fact = json.loads(capsys.readouterr().out)["metadata"]["quantization"]
    assert fact["method"] == "gguf" and fact["scheme"] == "Q4_1"
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"  quantization: {json.dumps(fact['text'])}\n" in text and '"bits_per_weight"' not in text
