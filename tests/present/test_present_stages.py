"""The stage list (attnlab.present.stages): keys built through engine.names, the entries each stage shows,
and the stage kept across re-traces. Qt-free: no QApplication here."""

import pytest

from attnlab.engine import names
from attnlab.engine.options import RunOptions
from attnlab.present import words
from attnlab.present.stages import OUTPUT_BOX, output_key, pick_stage, shape_text, stage_tensors, stages_for
from tests.support.tiny import build_tiny_model as make

SRC, TGT = "the black cat sees the dog", "le chat"


def run(arch="encoder-decoder", options=None):
    model = make(arch)
    src, tgt = (None, SRC) if arch == "decoder-only" else (SRC, None if arch == "encoder-only" else TGT)
    return model.trace(src, tgt, options or RunOptions())


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only", "encoder-only"])
def test_every_stage_names_tensors_that_the_trace_holds(arch):
    trace = run(arch)
    for stage in stages_for(trace):
        wanted = stage_tensors(stage)
        assert wanted and all(n in trace for n in wanted), (stage.key, wanted)
        assert shape_text(trace, stage).startswith(wanted[0])


def test_stage_keys_groups_and_boxes_follow_the_names_module():
    trace = run()
    stages = stages_for(trace)
    keys = [s.key for s in stages]
    assert keys[:4] == ["src.tokens", "src.embed", "src.pos", "src.input"]
    assert keys[-2:] == ["out.logits", "out.probs"] == [output_key(names.LOGITS), output_key(names.PROBS)]
    # a decoder layer with cross-attention: self, norm1, cross, norm2, ffn, norm3
    dec1 = [s for s in stages if s.group == "Decoder layer 2" and s.kind in ("addnorm", "ffn", "qkv")]
    assert [s.key for s in dec1] == [
        "dec.1.self.qkv",
        "dec.1.norm1",
        "dec.1.cross.qkv",
        "dec.1.norm2",
        "dec.1.ffn",
        "dec.1.norm3",
    ]
    by_key = {s.key: s for s in stages}
    assert by_key["dec.0.self.mask"].title == "masked self-attention · mask"
    assert by_key["dec.0.cross.mask"].title == "cross-attention · mask"
    assert by_key["enc.1.ffn"].title == words.word("ffn") == "feed-forward network"
    assert by_key["enc.0.norm2"].title == "add & LayerNorm 2"
    assert [
        by_key[k].schematic_box for k in ("tgt.embed", "enc.0.self.weights", "enc.1.ffn", "dec.1.norm3", "out.probs")
    ] == ["tgt.input", "enc.0.self", "enc.1.ffn", "dec.1.norm3", OUTPUT_BOX]
    assert {s.group for s in stages} == {
        "Source input",
        "Encoder layer 1",
        "Encoder layer 2",
        "Decoder input",
        "Decoder layer 1",
        "Decoder layer 2",
        "Output",
    }


def test_the_positional_stage_stays_while_the_toggle_is_off_and_is_absent_without_a_table():
    on, off = stages_for(run()), stages_for(run(options=RunOptions(positional=False)))
    assert "src.pos" in {s.key for s in on}
    assert [(s.key, s.title, s.group) for s in off] == [(s.key, s.title, s.group) for s in on]  # numbers stay
    rotary = make("decoder-only", positional="rotary").trace(None, SRC)
    assert "tgt.pos" not in rotary and not any(s.kind == "pos" for s in stages_for(rotary))


def test_pick_stage_fallbacks():
    stages = stages_for(run())
    assert pick_stage(stages, "dec.1.cross.mask").key == "dec.1.cross.mask"
    assert pick_stage(stages, "enc.1.norm9").key == "enc.1.self.qkv"  # first stage of its layer
    assert pick_stage(stages, "enc.7.self.qkv").key == stages[0].key
    assert pick_stage(stages, "tgt.nothing").key == "tgt.tokens"  # first of its group
    assert pick_stage([], "x") is None


def test_a_toggle_that_renames_nothing_gets_the_same_stage_list_back():
    from attnlab.present.stages import _build_stages

    model = make("encoder-decoder")
    base = model.trace(SRC, TGT, RunOptions())
    hotter = model.trace(SRC, TGT, RunOptions(temperature=2.0))  # a new trace of the same shape
    assert stages_for(hotter) is stages_for(base)
    assert stages_for(base) == _build_stages(base)
    no_residual = model.trace(SRC, TGT, RunOptions(residual=False))  # renames the add & norm stages
    renamed = stages_for(no_residual)
    assert renamed is not stages_for(base) and renamed == _build_stages(no_residual)
    assert [s.title for s in renamed] != [s.title for s in stages_for(base)]
    shorter = model.trace("the cat", TGT, RunOptions())  # other tokens, same entries: the same list
    assert stages_for(shorter) is stages_for(base)
    encoder_only = run("encoder-only")  # other entries: another list
    assert [s.key for s in stages_for(encoder_only)] == [s.key for s in _build_stages(encoder_only)]
    assert "dec.0.self.weights" not in {s.key for s in stages_for(encoder_only)}
