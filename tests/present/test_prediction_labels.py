"""Every decoder-side stage that concerns prediction labels its rows "input → predicted" by one rule
(facts.row_labels): attention maps, add & norm, feed-forward, and the output bars' position chooser and title,
for an encoder-decoder and a decoder-only model; encoder rows stay plain tokens (issue 11, item 3)."""

import pytest

from attnlab.present.facts import row_labels
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.stages import panel_class_for

SRC, TGT = "the black cat sees the dog", "le chat noir"
ROW_KINDS = ("scores", "weights", "context", "addnorm", "ffn")  # stages drawn with one row per token


@pytest.fixture(scope="module", params=["encoder-decoder", "decoder-only"])
def case(request, tiny_model):
    model = tiny_model(request.param)
    trace = model.trace(SRC, TGT) if request.param == "encoder-decoder" else model.trace(None, TGT)
    return model, trace


def expected(model, trace) -> list[str]:
    """Built here from the tokens and the logits: each input with the next input, the last with the argmax."""
    tgt = [str(t) for t in trace["tgt.tokens"]]
    guess = model.tgt_tokenizer.id_to_token(int(trace["logits"][-1].argmax()))
    return [f"{a} → {b}" for a, b in zip(tgt, tgt[1:], strict=False)] + [f"{tgt[-1]} → {guess}"]


def shown_rows(qtbot, stage, trace, vocab):
    panel = panel_class_for(stage.kind)()
    qtbot.addWidget(panel)
    panel.vocab = vocab
    panel.show_stage(trace, stage, ViewState())
    data = panel.shown_data()
    return data.get("rows", data.get("tokens"))


def decoder_side(stage) -> bool:
    if stage.site:
        return stage.site.startswith("dec.")  # decoder self- and cross-attention: the queries are decoder rows
    return bool(stage.layer and stage.layer.startswith("dec."))


def test_every_decoder_stage_that_predicts_labels_rows_input_to_predicted(qtbot, case):
    model, trace = case
    want = expected(model, trace)
    assert row_labels(trace, "tgt", len(want), model.tgt_tokenizer.id_to_token) == want
    seen = set()
    for stage in stages_for(trace):
        if stage.kind not in ROW_KINDS:
            continue
        rows = shown_rows(qtbot, stage, trace, model.tgt_tokenizer.id_to_token)
        if decoder_side(stage):
            assert rows == want, stage.key
            seen.add(stage.kind)
        else:
            assert rows == [str(t) for t in trace["src.tokens"]], stage.key  # the encoder predicts nothing
    assert seen == set(ROW_KINDS)


def test_output_position_chooser_and_title_say_input_to_predicted(qtbot, case):
    from PySide6.QtWidgets import QComboBox

    model, trace = case
    want = expected(model, trace)
    panel = panel_class_for("probs")()
    qtbot.addWidget(panel)
    panel.set_vocabulary(model.tgt_tokenizer.id_to_token)
    stage = next(s for s in stages_for(trace) if s.kind == "probs")
    panel.show_stage(trace, stage, ViewState(position=1))
    combo = panel.findChild(QComboBox, "outputPosition")
    assert [combo.itemText(i) for i in range(combo.count())] == [f"{i}: {w}" for i, w in enumerate(want)]
    assert f"position 1: {want[1]}" in panel._title.text()
    panel.show_stage(trace, stage, ViewState())  # the last position: the model's own guess
    assert f"position {len(want) - 1}: {want[-1]}" in panel._title.text()


def test_rows_without_a_vocabulary_name_the_guess_as_unknown(case):
    model, trace = case
    rows = row_labels(trace, "tgt", len(trace["tgt.tokens"]))
    assert rows[-1].endswith("→ ?") and rows[0] == f"<s> → {trace['tgt.tokens'][1]}"
    assert row_labels(trace, "tgt", len(trace["tgt.tokens"]) + 1) is None  # a count that does not fit: numbers


def test_the_shift_is_explained_once_on_the_decoder_input_and_matches_the_trace(case):
    from attnlab.present.shift import decoder_input_role

    model, trace = case
    tgt = [str(t) for t in trace["tgt.tokens"]]
    pieces = model.tgt_tokenizer.encode(TGT)[0]
    assert tgt == ["<s>", *pieces]  # the input really is the typed French shifted right by <s>
    text = decoder_input_role(trace)
    assert "“input → predicted”" in text and "&lt;s&gt; → le" in text
    translating = "src.tokens" in trace
    assert ("shifted one place to the right" in text) == translating
    assert "minus its last word" not in text  # the typed French is read whole; only </s> is never an input
