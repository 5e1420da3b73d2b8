"""The present/ functions the widgets ask instead of reading engine objects (present/model_info.py,
window_facts.py, schematic_boxes.py, status_texts.py), checked without Qt: against torch's own counts, the
run's own tokens, and the stage list the navigator walks."""

from __future__ import annotations

import pytest

from attnlab.engine.options import RunOptions
from attnlab.present import model_info, schematic_boxes, status_texts, window_facts
from attnlab.present.stages import stages_for


@pytest.fixture(scope="module")
def enc_dec(tiny_model):
    model = tiny_model("encoder-decoder")
    return model, model.trace("the cat sat", "le chat")


def test_parameter_count_is_torchs(enc_dec):
    """Shared and tied weights once, as torch's Module.parameters() counts them."""
    model, _ = enc_dec
    assert model_info.parameter_count(model) == sum(p.numel() for p in model.module.parameters())


def test_the_output_vocabulary_is_the_decoders_tokenizer(enc_dec, tiny_model):
    model, _ = enc_dec
    vocab = model_info.output_vocabulary(model)
    assert vocab is not None and [vocab(i) for i in range(5)] == [model.tgt_tokenizer.id_to_token(i) for i in range(5)]
    encoder = tiny_model("encoder-only")
    vocab = model_info.output_vocabulary(encoder)
    assert vocab is not None and vocab(3) == encoder.src_tokenizer.id_to_token(3)
    assert model_info.output_vocabulary(None) is None


def test_model_info_names_the_count_and_the_tokenizers(enc_dec):
    model, _ = enc_dec
    page = model_info.model_info_html(model)
    assert f"{sum(p.numel() for p in model.module.parameters()):,} parameters" in page
    assert f"{model.src_tokenizer.vocab_size:,} tokens" in page


def test_a_token_is_named_by_the_runs_own_tokens(enc_dec):
    _, trace = enc_dec
    ids, tokens = trace["src.ids"].tolist(), trace["src.tokens"]
    assert [window_facts.token_text(trace, i) for i in ids] == [str(t) for t in tokens]
    unused = max(ids + trace["tgt.ids"].tolist()) + 1
    assert window_facts.token_text(trace, unused) == f"#{unused}"


def test_status_texts_count_the_runs_tokens(enc_dec):
    model, trace = enc_dec
    texts = status_texts.status_texts(trace, model, paint_ms=2.5)
    assert texts.tokens == f"Tokens: {len(trace['src.tokens'])} source + {len(trace['tgt.tokens'])} decoder"
    assert texts.timing.endswith("paint 2.5 ms") and texts.device.startswith(f"Device: {trace.device.upper()}")
    assert window_facts.unknown_tokens(trace) == sum(t == "<unk>" for t in trace["src.tokens"] + trace["tgt.tokens"])


@pytest.mark.parametrize(
    ("arch", "src_label", "show_tgt", "show_generate"),
    [
        ("encoder-decoder", "&Source:", True, True),
        ("decoder-only", "&Prompt:", False, True),
        ("encoder-only", "&Source:", False, False),
    ],
)
def test_the_input_boxes_follow_the_architecture(tiny_model, arch, src_label, show_tgt, show_generate):
    words = model_info.input_words(tiny_model(arch))
    assert (words.src_label, words.show_tgt, words.show_generate) == (src_label, show_tgt, show_generate)


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only", "encoder-only"])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_every_schematic_box_is_a_stage_the_navigator_reaches(tiny_model, arch, norm):
    """A click on any box the schematic draws lands on a stage of the run (no dead boxes), at every layer."""
    model = tiny_model(arch)
    trace = model.trace("the cat sat", "le chat" if arch == "encoder-decoder" else None, RunOptions(norm=norm))
    reachable = {stage.schematic_box for stage in stages_for(trace)}
    options = trace.options  # the wiring the schematic draws for this run
    drawn = schematic_boxes.drawn_stacks(model.config)
    for side in drawn:
        for layer in range(schematic_boxes.layer_counts(model.config)[side]):
            boxes, branches, start, end = schematic_boxes.column(model.config, options, side, layer, side == drawn[-1])
            keys = {box for box, _, _ in boxes if box}
            assert keys <= reachable, keys - reachable
            assert 0 < start < end <= len(boxes) and all(first >= start for first, _ in branches)
            assert schematic_boxes.chip_box(side, layer) in reachable


def test_the_ablation_choices_are_the_engines_modes():
    from attnlab.engine.options import ABLATION_MODES

    assert tuple(mode for mode, _ in window_facts.ABLATE_CHOICES if mode is not None) == ABLATION_MODES


def test_a_failed_open_names_what_is_still_shown(enc_dec):
    model, _ = enc_dec
    assert (
        status_texts.failed_open_text("/x/y.safetensors", model)
        == f"Could not open y.safetensors — still showing {model.name}"
    )
    assert status_texts.failed_open_text("", None) == "Could not open the model — no model is open"
