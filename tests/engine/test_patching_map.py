"""Activation patching through LiveModel (issue 37): a patched run resumes at the patched layer and equals a
full patched run bit for bit; a patching map's cells equal individual patched runs; patches between runs of
different models or lengths are refused in one line."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine import names
from attnlab.engine.options import OptionsError, RunOptions
from attnlab.engine.patch_sweep import cells_of, check_pair, patch_from, patched_logits
from attnlab.engine.patching import PatchError, logit_difference
from tests.support.tiny import assert_same_trace, build_tiny_model

A, B = "the black cat sees the dog", "the small dog sees the cat"  # the same number of words
SIZES = dict(n_encoder_layers=3, n_decoder_layers=3)
LAYERS = {
    "decoder-only": dict(n_encoder_layers=0, n_decoder_layers=3),
    "encoder-decoder": SIZES,
    "encoder-only": dict(n_encoder_layers=3, n_decoder_layers=0),
}


@pytest.fixture(scope="module", params=["decoder-only", "encoder-decoder", "encoder-only"])
def pair(request):
    arch = request.param
    layers = LAYERS[arch]
    return arch, lambda: build_tiny_model(arch, seed=3, **layers)


def runs(model, arch):
    if arch == "encoder-decoder":
        return model.trace(A, "le chat"), (B, "le chat")
    return model.trace(A), (B, None)


@pytest.mark.parametrize(
    "entry_of",
    [
        lambda s: f"{s}.1.out",
        lambda s: f"{s}.2.self.context",
        lambda s: f"{s}.1.ffn.out",
        lambda s: f"{s}.2.self.k",
    ],
)
def test_a_patched_run_resumes_at_its_layer_and_equals_a_full_run(pair, entry_of):
    arch, build = pair
    model = build()
    a, (src, tgt) = runs(model, arch)
    stack = "dec" if arch != "encoder-only" else "enc"
    patch = patch_from(a, entry_of(stack), head=1 if "self" in entry_of(stack) else None, position=2)
    model.trace(src, tgt)  # run B, recorded
    resumed = model.trace(src, tgt, RunOptions(patch=(patch,)))
    assert resumed.info.get("resumed_from") == names.layer_of(patch.entry)
    fresh = build().trace(src, tgt, RunOptions(patch=(patch,)))  # same weights, never ran
    assert_same_trace(resumed, fresh)


def test_cross_attention_patch_resumes_in_the_decoder(tiny_model):
    model = tiny_model("encoder-decoder", seed=3, **SIZES)
    a = model.trace(A, "le chat")
    model.trace(B, "le chat")
    patch = patch_from(a, "dec.1.cross.v", head=0)
    resumed = model.trace(B, "le chat", RunOptions(patch=(patch,)))
    assert resumed.info["resumed_from"] == "dec.1"
    fresh = tiny_model("encoder-decoder", seed=3, **SIZES).trace(B, "le chat", RunOptions(patch=(patch,)))
    assert_same_trace(resumed, fresh)


@pytest.mark.parametrize("kind", ["residual", "head"])
def test_the_maps_cells_equal_individual_patched_runs(pair, kind):
    arch, build = pair
    model = build()
    a, (src, tgt) = runs(model, arch)
    cells = cells_of(a, kind)
    flat = [p for row in cells for p in row]
    swept = list(patched_logits(model, src, tgt, RunOptions(), flat))
    assert len(swept) == len(flat) == len(cells) * len(cells[0])
    other = build()  # individual recorded runs on a model that never swept, of some cells of every row
    step = max(1, len(cells[0]) - 1)
    for patch, logits in list(zip(flat, swept, strict=True))[::step]:
        single = other.trace(src, tgt, RunOptions(patch=(patch,)))
        assert torch.equal(logits, single[names.LOGITS]), patch.words()


def test_patches_between_runs_of_other_lengths_or_models_are_refused_in_one_line(tiny_model):
    model = tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=2)
    a = model.trace(A)
    short = model.trace("the cat")
    with pytest.raises(
        PatchError, match=r"^run A has \d+ tokens and run B \d+: patch between runs of the same length$"
    ):
        check_pair(a, short)
    patch = patch_from(a, "dec.1.out", position=1)
    with pytest.raises(PatchError) as caught:
        model.trace("the cat", options=RunOptions(patch=(patch,)))
    assert "\n" not in str(caught.value) and "same length" in str(caught.value)
    other = tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=3)
    with pytest.raises(OptionsError, match="comes from another model; patch between two runs of the same model"):
        other.trace(A, options=RunOptions(patch=(patch,)))
    with pytest.raises(PatchError, match="^runs A and B are of different models"):
        check_pair(a, other.trace(A))


def test_a_head_of_a_row_entry_and_an_unpatchable_entry_are_refused(tiny_model):
    model = tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=2)
    a = model.trace(A)
    with pytest.raises(OptionsError, match="dec.1.out has no heads"):
        model.trace(B, options=RunOptions(patch=(patch_from(a, "dec.1.out", head=0),)))
    with pytest.raises(OptionsError, match="cannot be patched"):
        model.trace(B, options=RunOptions(patch=(patch_from(a, "dec.1.self.weights"),)))


def test_the_logit_difference_reads_one_row():
    logits = torch.tensor([[0.0, 1.0, 2.0], [3.0, -1.0, 0.5]])
    assert logit_difference(logits, 0, 1) == 4.0
    assert logit_difference(logits, 2, 1, position=0) == 1.0


def test_a_cross_attention_map_patches_each_cross_heads_context(tiny_model):
    model = tiny_model("encoder-decoder", seed=3, **SIZES)
    a = model.trace(A, "le chat")
    cells = cells_of(a, "cross")
    assert [[p.words() for p in row][:1] for row in cells] == [[f"dec.{i}.cross.context head 1"] for i in range(3)]
    only_decoder = tiny_model("decoder-only", seed=3, n_encoder_layers=0, n_decoder_layers=2)
    with pytest.raises(PatchError, match="^this decoder-only model has no cross-attention to patch$"):
        cells_of(only_decoder.trace(A), "cross")
