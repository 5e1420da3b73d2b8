"""`attnlab trace --out` / Trace.save_npz write the entries one at a time (engine/trace_file.py): the file holds
what numpy's own np.savez writes of the materialised trace; each lean layer runs again once; nothing is kept
in the trace's host cache; the size said before writing is the file's; a write that cannot fit the memory
limit is refused in one line and writes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.cli import main
from attnlab.commands.trace import write_trace
from attnlab.engine import names, replay
from attnlab.engine.memory import LIMIT_VARIABLE
from attnlab.engine.trace_file import plan_npz
from tests.engine.test_replay import family_model, lean, replays_of
from tests.support.hf_tiny import IDS
from tests.support.tiny import build_tiny_model

CASES = ["encoder-decoder", "decoder-only", "encoder-only"]


def traced(arch: str, thin: bool):
    model = build_tiny_model(arch)
    model = lean(model) if thin else model
    if arch == "encoder-decoder":
        return model.trace("the black cat sees the dog", "le chat noir")
    return model.trace("the black cat sees the dog")


def reference_npz(trace, path):
    """What np.savez writes of the trace read whole, the way save_npz wrote it before it streamed."""
    arrays = {name: (np.asarray(v) if isinstance(v, list) else v.numpy()) for name, v in trace.items()}
    np.savez(path, **arrays, __notices__=np.asarray(trace.notices, dtype=str))


def assert_same_files(ours, theirs) -> None:
    with np.load(ours, allow_pickle=False) as a, np.load(theirs, allow_pickle=False) as b:
        assert a.files == b.files
        for name in a.files:
            x, y = a[name], b[name]
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


@pytest.mark.parametrize("thin", [False, True], ids=["whole", "lean"])
@pytest.mark.parametrize("arch", CASES)
def test_the_streamed_file_is_what_np_savez_writes(tmp_path, arch, thin):
    ours, theirs = tmp_path / "ours.npz", tmp_path / "theirs.npz"
    trace = traced(arch, thin)
    plan = plan_npz(trace)
    trace.save_npz(ours)
    assert not any(trace.on_host(n) for n, v in trace.entries.items() if not isinstance(v, list))  # nothing kept
    reference_npz(traced(arch, thin), theirs)
    assert_same_files(ours, theirs)
    with np.load(ours, allow_pickle=False) as npz:  # the plan knew every shape and dtype before writing
        assert {n: (npz[n].shape, npz[n].dtype) for n in npz.files} == {
            n: (plan.shapes[n], plan.dtypes[n]) for n in plan.shapes
        }
    assert abs(plan.file_bytes - ours.stat().st_size) <= 0.05 * ours.stat().st_size


@pytest.mark.parametrize("name", ["mistral", "gpt2-inverse-layer", "encoder-decoder"])
def test_each_lean_layer_runs_again_once_while_writing(tmp_path, name):
    model = lean(build_tiny_model(name) if name == "encoder-decoder" else family_model(name))
    config = model.config
    trace = model.trace("the black cat", "le chat") if config.has_encoder else model.trace(list(IDS))
    (replayer,) = {e.params[0] for e in trace.entries.values() if getattr(e, "rule", None) == replay.RULE}
    assert len(replays_of(trace)) == 1 and replayer.replays == 0
    plan = plan_npz(trace)
    trace.save_npz(tmp_path / "t.npz")
    layers = config.n_encoder_layers * config.has_encoder + config.n_decoder_layers * config.has_decoder
    # each layer once; the plan runs the first layer of each stack for its shapes, which writing reuses while the
    # replay keeps it (KEPT_LAYERS): an encoder-decoder's dec.0 is let go while the encoder is written
    assert layers <= replayer.replays <= layers + (config.has_encoder and config.has_decoder)
    assert plan.peak_bytes > 0


def test_a_write_that_cannot_fit_the_memory_limit_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    trace = traced("decoder-only", thin=True)
    out = tmp_path / "t.npz"
    monkeypatch.setenv(LIMIT_VARIABLE, "1")  # one byte: nothing more fits
    assert write_trace(trace, str(out)) is False
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "needs about" in captured.err and "nothing was written" in captured.err
    assert not out.exists() and not list(tmp_path.iterdir())
    monkeypatch.delenv(LIMIT_VARIABLE)
    assert write_trace(trace, str(out)) is True
    said = capsys.readouterr().out
    assert said.startswith(f"Writing {plan_npz(trace).summary(str(out)).removeprefix('writing ')}") and out.exists()


def test_no_lens_leaves_out_the_lens_and_nothing_else(tmp_path, capsys):
    ckpt = tmp_path / "lm.safetensors"
    sizes = ["--d-model", "16", "--heads", "4", "--d-ff", "32", "--dec-layers", "2", "--max-len", "32"]
    assert main(["init", "--arch", "decoder-only", *sizes, "--out", str(ckpt)]) == 0
    runs = {}
    for name, extra in (("all", []), ("no-lens", ["--no-lens"])):
        runs[name] = tmp_path / f"{name}.npz"
        args = ["trace", "--checkpoint", str(ckpt), "--src", "the cat", "--out", str(runs[name]), *extra]
        capsys.readouterr()
        assert main(args) == 0
        said = capsys.readouterr().out
        assert said.startswith("Writing ") and f"to {runs[name]} (" in said
    with np.load(runs["all"], allow_pickle=False) as a, np.load(runs["no-lens"], allow_pickle=False) as b:
        lens = {names.LENS_IDS, names.LENS_PROBS}
        assert lens <= set(a.files) and not lens & set(b.files)
        assert [n for n in a.files if n not in lens] == b.files
        assert all(np.array_equal(a[n], b[n]) for n in b.files)
