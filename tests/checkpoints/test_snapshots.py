"""Training snapshots: `train(snapshot_steps=…)` and `attnlab train --snapshots` keep the weights at the chosen
steps (and only those) without changing the training; `load_snapshots` checks the file against its model and
gives LiveModels whose weights are the stored float16 tensors; a damaged or foreign file gives one clear error."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

import attnlab
from attnlab.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from attnlab.checkpoints.snapshots import load_snapshots
from attnlab.checkpoints.snapshots_file import SNAPSHOTS_FORMAT, save_snapshots, snapshots_path, tensor_digest
from attnlab.training.classroom import recipe_for, save_training_snapshots
from attnlab.training.train import train

STEPS = 6
KEPT = (0, 2, 5)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 6-step translation model trained with snapshots at 0, 2 and 5 (saved), and once without."""
    recipe = recipe_for("translation", steps=STEPS, n_pairs=120)
    with_snapshots = train(recipe, seed=0, progress=False, threads=1, snapshot_steps=KEPT)
    without = train(recipe, seed=0, progress=False, threads=1)
    folder = tmp_path_factory.mktemp("snapshots")
    checkpoint = save_checkpoint(with_snapshots.model, folder / "translation.safetensors")
    save_training_snapshots(with_snapshots, checkpoint, STEPS)
    return with_snapshots, without, checkpoint


def tensors_of(model):
    return {n: t.detach().clone() for n, t in model.module.checkpoint_tensors().items()}


def test_snapshots_are_taken_at_the_chosen_steps_only(trained):
    result, _, checkpoint = trained
    assert sorted(result.snapshots) == list(KEPT)
    assert all(t.dtype == torch.float16 for w in result.snapshots.values() for t in w.values())
    with safe_open(str(snapshots_path(checkpoint)), framework="pt") as f:
        steps = {key.split(".", 1)[0] for key in f.keys()}
        meta = f.metadata()
    assert steps == {f"step{s}" for s in KEPT}
    assert meta["format"] == SNAPSHOTS_FORMAT and meta["steps"] == "0,2,5" and meta["final_step"] == str(STEPS)
    # the loss stored for step N is the one the training measured on those weights (the batch of step N + 1)
    losses = json.loads(meta["losses"])
    assert losses == {str(s): round(result.history[s]["loss"], 5) for s in KEPT}


def test_snapshots_change_nothing_in_the_training(trained):
    result, without, _ = trained
    a, b = tensors_of(result.model), tensors_of(without.model)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert [r["loss"] for r in result.history] == [r["loss"] for r in without.history]


def test_step_zero_is_the_initialisation_and_the_steps_differ(trained):
    result, _, _ = trained
    name = "decoder.0.cross_attn.w_q.weight"
    w0, w2, w5 = (result.snapshots[s][name].float() for s in KEPT)
    assert not torch.equal(w0, w2) and not torch.equal(w2, w5)
    final = result.model.module.checkpoint_tensors()[name].detach()
    assert torch.allclose(w5, final, atol=0.05) and not torch.equal(w5, final.half().float())


def test_a_loaded_snapshot_holds_the_stored_float16_tensors_as_float32(trained):
    _, _, checkpoint = trained
    snaps = attnlab.load_snapshots(checkpoint)
    assert snaps.steps == (*KEPT, STEPS)
    with safe_open(str(snapshots_path(checkpoint)), framework="pt") as f:
        stored = {key: f.get_tensor(key) for key in f.keys()}
    model = snaps.model_at(2)
    assert model.metadata["training_step"] == 2
    for name, param in model.module.checkpoint_tensors().items():
        assert param.dtype == torch.float32
        assert torch.equal(param.detach(), stored[f"step2.{name}"].float()), name
    assert snaps.model_at(STEPS) is snaps.final
    assert snaps.model_at(2) is model  # built once


def test_a_snapshot_trace_equals_a_model_filled_by_hand(trained):
    """The snapshot's trace against the final model's module with the stored tensors copied in by torch."""
    _, _, checkpoint = trained
    snaps = load_snapshots(checkpoint)
    by_hand = load_checkpoint(checkpoint)
    with safe_open(str(snapshots_path(checkpoint)), framework="pt") as f, torch.no_grad():
        for name, param in by_hand.module.checkpoint_tensors().items():
            param.copy_(f.get_tensor(f"step0.{name}").to(torch.float32))
    src, tgt = "the cat sleeps .", "le chat"
    ours, ref = snaps.model_at(0).trace(src, tgt), by_hand.trace(src, tgt)
    final = snaps.final.trace(src, tgt)
    for entry in ("enc.0.self.weights", "dec.0.cross.weights", "logits"):
        assert torch.equal(ours[entry], ref[entry]), entry
        assert not torch.allclose(ours[entry], final[entry]), entry


def test_the_loader_notes_the_snapshots_beside_a_checkpoint_and_never_saves_that_note(trained, tmp_path):
    _, _, checkpoint = trained
    model = load_checkpoint(checkpoint)
    assert model.metadata["snapshots_file"] == str(snapshots_path(checkpoint))
    assert load_snapshots(model).steps == (*KEPT, STEPS)
    copy = save_checkpoint(model, tmp_path / "copy.safetensors")
    assert "snapshots_file" not in load_checkpoint(copy).metadata
    # a folder holding one checkpoint and its snapshots opens the checkpoint
    assert load_checkpoint(checkpoint.parent).metadata["snapshots_file"]


def test_the_cli_keeps_the_asked_steps_and_leaves_out_the_final_one(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "train", "--model", "translation", "--steps", "3", "--pairs", "60",
         "--snapshots", "3,0,1", "--eval-n", "2", "--quiet", "--threads", "1", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    snaps = load_snapshots(tmp_path / "translation.safetensors")
    assert snaps.steps == (0, 1, 3) and sorted(snaps.weights) == [0, 1]


@pytest.mark.parametrize("text", ["0,x", "-1,5", ","])
def test_the_cli_refuses_steps_that_are_not_steps(tmp_path, text):
    done = subprocess.run(
        [sys.executable, "-m", "attnlab.cli", "train", f"--snapshots={text}", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "--snapshots" in done.stderr and "e.g. 0,200,400" in done.stderr
    assert not any(tmp_path.iterdir())


def test_train_refuses_a_step_past_the_end():
    with pytest.raises(ValueError, match="between 0 and the 6 training steps; 7 do"):
        train(recipe_for("translation", steps=STEPS, n_pairs=120), seed=0, progress=False, snapshot_steps=(0, 7))


# ---- damaged and foreign files ------------------------------------------------------------------------------
def write_like(trained, path, change):
    """A copy of the trained snapshots file with `change(tensors, metadata)` applied."""
    _, _, checkpoint = trained
    with safe_open(str(snapshots_path(checkpoint)), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = dict(f.metadata())
    change(tensors, meta)
    save_file(tensors, str(path), metadata=meta)
    return path


def test_a_missing_file_says_so(tmp_path, trained):
    with pytest.raises(CheckpointError, match="Cannot load the snapshots .*there is no file at that path"):
        load_snapshots(tmp_path / "nothing.snapshots.safetensors", model=load_checkpoint(trained[2]))
    with pytest.raises(CheckpointError, match="has no training snapshots"):
        load_snapshots(attnlab.load_bundled("language"))


def test_a_model_of_another_shape_is_refused_before_reading_tensors(trained, tiny_model, tmp_path):
    _, _, checkpoint = trained
    with pytest.raises(CheckpointError) as e:
        load_snapshots(snapshots_path(checkpoint), model=tiny_model())
    text = str(e.value)
    assert "Cannot load the snapshots" in text and "this model's [32, 32]" in text and "belong to another model" in text


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda t, m: m.update(format="attnlab/1"), "not an attnlab snapshots file"),
        (lambda t, m: m.update(steps="0,9"), "not distinct, ascending and between 0 and the final step 6"),
        (lambda t, m: m.update(steps="zero"), "are not whole numbers"),
        (lambda t, m: t.pop("step2.decoder.0.cross_attn.w_q.weight"), "1 tensors are missing"),
        (lambda t, m: t.update({"step2.extra": torch.zeros(2)}), "belong to no step of this model"),
        (
            lambda t, m: t.update({"step0.encoder.0.self_attn.w_q.bias": torch.zeros(3, dtype=torch.float16)}),
            "[3], this model's [128]",
        ),
        (lambda t, m: t["step0.decoder.0.cross_attn.w_q.weight"].fill_(float("nan")), "NaN or infinite"),
        (lambda t, m: m.update(weights_sha256="0" * 64), "belong to another model"),
        (lambda t, m: m.update(losses="[1, 2]"), "losses entry is not a JSON object"),
    ],
)
def test_a_damaged_snapshots_file_gives_one_clear_error(trained, tmp_path, change, words):
    model = load_checkpoint(trained[2])
    path = write_like(trained, tmp_path / "bad.snapshots.safetensors", change)
    with pytest.raises(CheckpointError, match="Cannot load the snapshots") as e:
        load_snapshots(path, model=model)
    assert words in str(e.value)


def test_a_truncated_snapshots_file_gives_one_clear_error(trained, tmp_path):
    good = snapshots_path(trained[2]).read_bytes()
    path = tmp_path / "cut.snapshots.safetensors"
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="Cannot load the snapshots .*truncated"):
        load_snapshots(path, model=load_checkpoint(trained[2]))


def test_the_writer_refuses_to_write_nothing_and_digests_the_bytes(tmp_path):
    with pytest.raises(CheckpointError, match="there are none"):
        save_snapshots(tmp_path / "x.snapshots.safetensors", {5: {"w": torch.zeros(2)}}, 5, {"w": torch.zeros(2)})
    assert not (tmp_path / "x.snapshots.safetensors").exists()
    a, b = {"w": torch.zeros(2)}, {"w": torch.tensor([0.0, -0.0])}
    assert tensor_digest(a) != tensor_digest(b)  # bytes, not values: the final weights must be these exactly


def test_attnlab_trace_runs_a_training_step_and_info_lists_the_steps(trained, tmp_path):
    import numpy as np

    _, _, checkpoint = trained
    out = tmp_path / "t.npz"
    cli = [sys.executable, "-m", "attnlab.cli"]
    done = subprocess.run(
        [*cli, "trace", "--checkpoint", str(checkpoint), "--src", "the cat sleeps .", "--tgt", "le chat",
         "--training-step", "2", "--device", "cpu", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = load_snapshots(checkpoint).model_at(2).trace("the cat sleeps .", "le chat")["dec.0.cross.weights"]
    saved = np.load(out, allow_pickle=False)["dec.0.cross.weights"]
    np.testing.assert_allclose(saved, expected.numpy(), rtol=0, atol=1e-6)  # a thread count apart at most
    missing = subprocess.run(
        [*cli, "trace", "--checkpoint", str(checkpoint), "--src", "x", "--training-step", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2 and "no snapshot at step 3; the steps are 0, 2, 5, 6" in missing.stderr
    info = subprocess.run([*cli, "info", str(checkpoint), "--json"], capture_output=True, text=True, timeout=120)
    facts = json.loads(info.stdout)["snapshots"]
    assert facts["steps"] == [0, 2, 5, 6] and facts["file"].endswith("translation.snapshots.safetensors")


def test_opening_the_snapshots_file_as_a_model_points_to_its_checkpoint(trained):
    with pytest.raises(CheckpointError, match="holds training snapshots .* open translation.safetensors beside it"):
        load_checkpoint(snapshots_path(trained[2]))


# ---- the bundled translation model's snapshots ----------------------------------------------------------------
def test_the_bundled_translation_model_finds_its_snapshots():
    model = attnlab.load_bundled("translation")
    snaps = attnlab.load_snapshots(model)
    assert snaps.steps == (0, 300, 400, 600, 3000) and snaps.final is model
    assert Path(model.metadata["snapshots_file"]).stat().st_size < 15_000_000  # the size budget of issue 12
    assert snaps.loss_at(0) > 7 > snaps.loss_at(300) > snaps.loss_at(400) > snaps.loss_at(600) > snaps.loss_at(3000)


def test_the_bundled_cross_attention_aligns_as_training_goes_on():
    """The alignment figure of `attnlab eval` (best head, 'predicting' reading) on 40 held-out pairs rises at
    every kept step: the diagonal forming (docs/model-card.md has the figures on 100 pairs)."""
    from attnlab.training.evaluate import alignment_accuracy, held_out_pairs

    snaps = attnlab.load_snapshots("translation")
    pairs = held_out_pairs(snaps.final, 40)
    best = [alignment_accuracy(snaps.model_at(s), pairs)["predicting"]["best"]["accuracy"] for s in snaps.steps]
    assert best[0] < 0.3 and best[-1] > 0.9
    assert all(a < b for a, b in zip(best, best[1:], strict=False)), best
