"""A mask toggle re-runs from the first layer whose mask it changes, and gives exactly what a full run gives.

Every toggle below runs after a base run on one model (which may resume) and on a fresh model with the same
weights that never ran (a full run); every entry must be equal (tolerance 0, on the CPU), the resumed run must
start where expected, and the entries before that layer must be the previous run's own tensors.
"""

import pytest
import torch

from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from tests.support.tiny import assert_same_trace, build_tiny_model

SRC, TGT = "the black cat sees the dog", "le chat noir voit"
LAYERS = {  # three layers in each stack the architecture has
    "encoder-decoder": dict(n_encoder_layers=3, n_decoder_layers=3),
    "decoder-only": dict(n_encoder_layers=0, n_decoder_layers=3),
    "encoder-only": dict(n_encoder_layers=3, n_decoder_layers=0),
}
BASE = RunOptions()
# label -> (architecture, options before, options after, where the second run should start: layer or None)
CASES = {
    "cell on dec.2.self": ("encoder-decoder", BASE, BASE.toggled_mask_cell("dec.2.self", 2, 0), "dec.2"),
    "cell on dec.1.cross": ("encoder-decoder", BASE, BASE.toggled_mask_cell("dec.1.cross", 1, 3), "dec.1"),
    "cell on dec.0.self": ("encoder-decoder", BASE, BASE.toggled_mask_cell("dec.0.self", 1, 0), "dec.0"),
    "cell on enc.2.self": ("encoder-decoder", BASE, BASE.toggled_mask_cell("enc.2.self", 0, 4), "enc.2"),
    "cell on enc.0.self (full run)": ("encoder-decoder", BASE, BASE.toggled_mask_cell("enc.0.self", 0, 4), None),
    "cell removed again": ("encoder-decoder", BASE.toggled_mask_cell("dec.2.self", 2, 0), BASE, "dec.2"),
    "whole row blocked": (
        "encoder-decoder",
        BASE,
        BASE.with_custom_mask("dec.1.cross", [(0, k) for k in range(7)]),
        "dec.1",
    ),
    "mask on every dec.cross": ("encoder-decoder", BASE, BASE.with_custom_mask("dec.cross", [(1, 1)]), "dec.0"),
    "decoder causal off": ("encoder-decoder", BASE, BASE.with_causal("dec.self", False), "dec.0"),
    "cross causal on": ("encoder-decoder", BASE, BASE.with_causal("dec.cross", True), "dec.0"),
    "cell and temperature": (
        "encoder-decoder",
        BASE,
        BASE.toggled_mask_cell("dec.2.cross", 0, 0).replace(temperature=2.5),
        "dec.2",
    ),
    "pre-norm, cell on dec.1.self": (
        "encoder-decoder",
        BASE.replace(norm="pre"),
        BASE.replace(norm="pre").toggled_mask_cell("dec.1.self", 3, 1),
        "dec.1",
    ),
    "8 heads, scale off, cell": (
        "encoder-decoder",
        BASE.replace(n_heads=8, scale=False),
        BASE.replace(n_heads=8, scale=False).toggled_mask_cell("dec.2.self", 1, 0),
        "dec.2",
    ),
    "padded, cell on dec.1.cross": (
        "encoder-decoder",
        BASE.replace(pad_to=10),
        BASE.replace(pad_to=10).toggled_mask_cell("dec.1.cross", 0, 2),
        "dec.1",
    ),
    "mask and scale (full run)": (
        "encoder-decoder",
        BASE,
        BASE.toggled_mask_cell("dec.2.self", 2, 0).replace(scale=False),
        None,
    ),
    "decoder-only cell on dec.1.self": ("decoder-only", BASE, BASE.toggled_mask_cell("dec.1.self", 2, 1), "dec.1"),
    "decoder-only cell on dec.0.self": ("decoder-only", BASE, BASE.toggled_mask_cell("dec.0.self", 2, 1), "dec.0"),
    "encoder-only cell on enc.2.self": ("encoder-only", BASE, BASE.toggled_mask_cell("enc.2.self", 2, 1), "enc.2"),
    "encoder-only causal on": ("encoder-only", BASE, BASE.with_causal("enc.self", True), None),
}


def make(arch: str) -> LiveModel:
    return build_tiny_model(arch, **LAYERS[arch])


@pytest.mark.parametrize("label", list(CASES))
def test_a_mask_toggle_resumes_where_it_starts_and_equals_a_full_run(label):
    arch, before, after, start = CASES[label]
    model = make(arch)
    first = model.trace(SRC, TGT, before)
    toggled = model.trace(SRC, TGT, after)
    full = make(arch).trace(SRC, TGT, after)  # never ran before: a full run
    assert "resumed_from" not in full.info
    assert toggled.info.get("resumed_from") == start
    assert_same_trace(toggled, full)
    assert toggled.options == full.options
    if start is not None:  # what comes before the first changed layer is the previous run's, not a copy
        reused = [
            n
            for n in first.entries
            if not n.startswith(start + ".") and n in toggled.entries and toggled.entries[n] is first.entries[n]
        ]
        first_of_layer = next(i for i, n in enumerate(first.names()) if n.startswith(start + "."))
        assert len(reused) >= first_of_layer - 4  # all but tokens and ids, recorded again
        assert not any(  # tensors computed again (derived rules are built once and shared by every run)
            toggled.entries[n] is first.entries[n]
            for n in first.names()[first_of_layer:]
            if n in first.entries and isinstance(first.entries[n], torch.Tensor)
        )


def test_toggles_in_a_row_each_equal_a_full_run():
    model = make("encoder-decoder")
    options = BASE
    for site, q, k in [("dec.2.self", 2, 0), ("dec.1.cross", 0, 1), ("enc.1.self", 3, 3), ("dec.2.self", 2, 0)]:
        options = options.toggled_mask_cell(site, q, k)
        assert_same_trace(model.trace(SRC, TGT, options), make("encoder-decoder").trace(SRC, TGT, options))


def test_host_copies_of_reused_entries_carry_over_and_new_ones_do_not():
    model = make("encoder-decoder")
    first = model.trace(SRC, TGT, BASE)
    early, late = first["enc.0.self.weights"], first["dec.2.self.weights"]
    toggled = model.trace(SRC, TGT, BASE.toggled_mask_cell("dec.2.self", 2, 0))
    assert toggled["enc.0.self.weights"] is early
    assert toggled["dec.2.self.weights"][:, 2, 0].eq(0).all() and not torch.equal(toggled["dec.2.self.weights"], late)


def test_the_kept_layer_inputs_share_the_trace_storage_and_go_with_the_text():
    model = make("encoder-decoder")
    trace = model.trace(SRC, TGT, BASE)
    stored = {v.untyped_storage().data_ptr() for v in trace.entries.values() if isinstance(v, torch.Tensor)}
    kept = model.reuse.last_inputs.tensors
    assert len(kept) == 3 + 3 + 1  # every layer's input and the encoder's output
    assert all(x.untyped_storage().data_ptr() in stored for x in kept.values())  # no memory of their own
    other = model.trace(SRC, "le chien", BASE.toggled_mask_cell("dec.2.self", 2, 0))  # new text: a full run
    assert "resumed_from" not in other.info
    assert all(
        x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr()
        for x in model.reuse.last_inputs.tensors.values()
        for y in kept.values()
    )


def test_no_layer_inputs_without_recording_and_changed_weights_run_in_full():
    model = make("encoder-decoder")
    model.trace(SRC, TGT, BASE.replace(record=False))
    assert model.reuse.last_inputs is None
    assert "resumed_from" not in model.trace(SRC, TGT, BASE.toggled_mask_cell("dec.2.self", 2, 0)).info
    with torch.no_grad():
        model.module.decoder[2].self_attn.w_q.weight.mul_(2.0)
    again = model.trace(SRC, TGT, BASE)
    assert "resumed_from" not in again.info
    assert_same_trace(again, _fresh_with_weights_of(model).trace(SRC, TGT, BASE))


def _fresh_with_weights_of(model: LiveModel) -> LiveModel:
    fresh = make("encoder-decoder")
    fresh.module.load_state_dict(model.module.state_dict())
    return fresh


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_a_mask_toggle_resumes_on_the_gpu_and_equals_a_full_cuda_run():
    on_gpu = BASE.replace(device="cuda")
    after = on_gpu.toggled_mask_cell("dec.2.cross", 1, 2)
    model = make("encoder-decoder")
    model.trace(SRC, TGT, on_gpu)
    toggled = model.trace(SRC, TGT, after)
    assert toggled.info.get("resumed_from") == "dec.2"
    assert all(x.device.type == "cuda" for x in model.reuse.last_inputs.tensors.values())
    full = make("encoder-decoder").trace(SRC, TGT, after)
    assert full.names() == toggled.names()
    for name in full.names():
        if not isinstance(full[name], list):
            torch.testing.assert_close(toggled[name], full[name], rtol=0, atol=1e-6, equal_nan=True, msg=name)


def test_a_run_that_moves_the_weights_still_lets_the_next_mask_toggle_resume(monkeypatch):
    """A move to the GPU gives every weight a new Parameter (a new version counter): the run is kept under
    the key it has after the move, so the next mask toggle resumes. Simulated on the CPU: the first run's
    placement makes fresh Parameters as module.to("cuda") does (the CUDA test above failed on an H200)."""
    model = make("encoder-decoder")
    place, moves = model._place, []

    def place_as_a_device_move(*args, **kwargs):
        place(*args, **kwargs)
        if not moves:
            before = sum(p._version for p in model.module.parameters())
            torch.__future__.set_overwrite_module_params_on_conversion(True)
            try:
                with torch.inference_mode(False):
                    model.module._apply(lambda t: t.clone())
            finally:
                torch.__future__.set_overwrite_module_params_on_conversion(False)
            moves.append(before - sum(p._version for p in model.module.parameters()))

    monkeypatch.setattr(model, "_place", place_as_a_device_move)
    model.trace(SRC, TGT, BASE)
    assert moves and moves[0] != 0  # the counters did change
    after = BASE.toggled_mask_cell("dec.2.cross", 1, 2)
    toggled = model.trace(SRC, TGT, after)
    assert toggled.info.get("resumed_from") == "dec.2"
    assert_same_trace(toggled, _fresh_with_weights_of(model).trace(SRC, TGT, after))


def test_an_edit_of_the_weights_after_a_run_in_another_precision_is_seen():
    """A run that converts the weights (bfloat16 held, run in float32) leaves plain Parameters, whose version
    counters see a later in-place edit: the next run computes afresh (before, the converted weights were
    inference tensors, uncounted, and the edited model returned the old logits)."""
    from attnlab.engine.precision import convert_module

    model = make("decoder-only")
    convert_module(model.module, torch.bfloat16)
    model.held_dtype = torch.bfloat16
    widened = RunOptions(precision="float32")
    before = model.trace("the black cat", options=widened)
    assert not any(p.is_inference() for p in model.module.parameters())
    with torch.no_grad():
        model.module.decoder[0].self_attn.w_q.weight.mul_(3.0)
    after = model.trace("the black cat", options=widened)
    assert not torch.equal(before["logits"], after["logits"])
