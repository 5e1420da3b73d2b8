"""One spec per option (issue 22, item 2): every RunOptions field is described once, in the option table
(engine/option_specs.py), and the controls, the `attnlab trace` flags, the lesson keys, the run cache's reuse
rules, the stage key and the banner's reasons are generated from it. A spec added to the table shows up in
each of them; a spec's invalidation class is what the run cache does."""

from __future__ import annotations

import dataclasses

import pytest

from attnlab.commands import trace as trace_command
from attnlab.engine import names, option_rules, option_specs
from attnlab.engine.option_parts import PARTS, switch_off
from attnlab.engine.option_spec import EVERYTHING, FROM_SITE, NOTHING, CliFlag, Control, LessonKey, OptionSpec
from attnlab.engine.options import RunOptions
from attnlab.engine.runcache import first_changed_layer
from attnlab.present import facts, lessons
from attnlab.present.stages import stages_for

SRC, TGT = "the black cat sees the small dog", "le chat"

# `record` has a spec without a control, a flag or a lesson key; this one gives it all three.
RECORD = OptionSpec(
    "record",
    controls=(Control("fast", "fastPathCheck", "check", PARTS, None, "Keep every step", text="Record every step"),),
    cli=(
        CliFlag("--fast-path", {"action": "store_true", "help": "record nothing but the output"}, switch_off("record")),
    ),
    lesson=LessonKey("recorded", (bool,)),
    departs=lambda _c, o, _p: [] if o.record else ["nothing but the output is recorded"],
)


def with_spec(monkeypatch, spec: OptionSpec) -> None:
    """The option table with `spec` in place of the spec of its field."""
    table = tuple(spec if s.field == spec.field else s for s in option_specs.SPECS)
    monkeypatch.setattr(option_specs, "SPECS", table)


def test_every_option_field_is_described_exactly_once():
    described = [s.field for s in option_specs.SPECS]
    assert sorted(described) == sorted(f.name for f in dataclasses.fields(RunOptions))
    assert len(set(described)) == len(described)
    assert all(s.invalidates in (NOTHING, "output", FROM_SITE, EVERYTHING) for s in option_specs.SPECS)
    assert all(
        s.site_changed is not None or s.site_changed_in is not None
        for s in option_specs.SPECS
        if s.invalidates == FROM_SITE
    )


def _trace_args(*flags: str):
    parser = trace_command.argparse.ArgumentParser(prog="attnlab trace")
    trace_command.add_arguments(parser)
    return parser, parser.parse_args(["--src", SRC, "--out", "x.npz", *flags])


def test_the_trace_flags_are_the_tables(monkeypatch):
    _parser, args = _trace_args("--no-scale", "--heads", "2", "--no-causal-mask", "--temperature", "0.5")
    options = trace_command.options_from(args)
    assert (options.scale, options.n_heads, options.is_causal("dec.0.self"), options.temperature) == (
        False,
        2,
        False,
        0.5,
    )
    with pytest.raises(SystemExit):
        _trace_args("--fast-path")  # not a flag of the real table
    with_spec(monkeypatch, RECORD)
    parser, args = _trace_args("--fast-path", "--no-pos")
    assert "--fast-path" in parser.format_help() and "record nothing but the output" in parser.format_help()
    options = trace_command.options_from(args)
    assert options.record is False and options.positional is False and options.scale is True


def test_a_bad_flag_value_names_its_flag():
    _parser, args = _trace_args("--ablate", "enc.0.self")
    with pytest.raises(ValueError, match=r"^--ablate: an ablation is written SITE:HEAD"):
        trace_command.options_from(args)


LESSON = 'src = "dog bites man"\n[[step]]\nstage = "src.tokens"\ntoggles = {{ {} }}\n'


def test_the_lesson_keys_are_the_tables(monkeypatch):
    with pytest.raises(lessons.LessonError, match="unknown key 'recorded'"):
        lessons.parse_lesson(LESSON.format("recorded = false"))
    with_spec(monkeypatch, RECORD)
    lesson = lessons.parse_lesson(LESSON.format("recorded = false, scale = false"))
    assert lesson.options(0).record is False and lesson.options(0).scale is False
    assert lessons.toggles_of(RunOptions(record=False, residual=False)) == {"residual": False, "recorded": False}
    with pytest.raises(lessons.LessonError, match="step 1: toggle 'recorded' must be true or false, not 3"):
        lessons.parse_lesson(LESSON.format("recorded = 3"))


def test_a_lesson_value_the_spec_refuses_gets_its_message():
    with pytest.raises(lessons.LessonError, match="step 1: toggle 'n_heads' cannot be 0"):
        lessons.parse_lesson(LESSON.format("n_heads = 0"))
    with pytest.raises(lessons.LessonError, match="toggle 'causal' maps a site kind"):
        lessons.parse_lesson(LESSON.format('causal = { "dec.self" = 1 }'))


def test_an_invalidation_class_in_the_table_is_what_the_run_cache_does(tiny_model, monkeypatch):
    model = tiny_model("encoder-decoder", seed=2)
    first = model.trace(SRC, TGT, RunOptions())
    again = model.trace(SRC, TGT, RunOptions(padding_mask=False))  # "everything": a full run
    assert "reused" not in again.info and again[names.LOGITS] is not first[names.LOGITS]
    with_spec(monkeypatch, dataclasses.replace(option_specs.PADDING_MASK, invalidates=NOTHING))
    model.trace(SRC, TGT, RunOptions())
    reused = model.trace(SRC, TGT, RunOptions(padding_mask=False))  # "nothing": the last run as it is
    assert "reused" in reused.info and reused.options.padding_mask is False
    before, after = RunOptions(), RunOptions(scale=False)
    assert first_changed_layer(model.config, before, after) is None  # scale: "everything"
    at_enc_1 = dataclasses.replace(
        option_specs.SCALE, invalidates=FROM_SITE, site_changed=lambda b, a, s: s == "enc.1.self"
    )
    with_spec(monkeypatch, at_enc_1)
    assert first_changed_layer(model.config, before, after) == ("enc", 1)


def test_the_stage_key_and_the_banner_follow_the_table(tiny_model, monkeypatch):
    model = tiny_model("encoder-decoder", seed=3)
    plain, unpadded = model.trace(SRC, TGT, RunOptions()), model.trace(SRC, TGT, RunOptions(padding_mask=False))
    assert tuple(plain) == tuple(unpadded) and stages_for(plain) is stages_for(unpadded)  # renames no stage
    assert facts.untrained_reasons(model.trace(SRC, TGT, RunOptions(record=False))) == []
    with_spec(monkeypatch, dataclasses.replace(option_specs.PADDING_MASK, renames_stages=True))
    assert option_rules.stage_key(unpadded.options) != option_rules.stage_key(plain.options)
    assert stages_for(plain) is not stages_for(unpadded)
    with_spec(monkeypatch, RECORD)
    assert facts.untrained_reasons(model.trace(SRC, TGT, RunOptions(record=False))) == [
        "nothing but the output is recorded"
    ]


@pytest.mark.usefixtures("isolated_settings")
def test_a_spec_added_to_the_table_gets_its_control(qtbot, open_window, tiny_model, monkeypatch):
    from PySide6.QtWidgets import QCheckBox

    with_spec(monkeypatch, RECORD)
    win = open_window(tiny_model("encoder-decoder", seed=1))
    box = win.findChild(QCheckBox, "fastPathCheck")
    assert box is win.controls.fast and box.text() == "Record every step" and box.toolTip() == "Keep every step"
    assert box.isChecked() and box.isEnabled()
    assert box.parentWidget().title() == PARTS  # in the group its spec names
    asked = []
    monkeypatch.setattr(win.session, "set_options", asked.append)
    box.click()
    assert asked == [win.session.options.replace(record=False)]
