"""The logit lens (engine/logit_lens.py) against transformers: a middle layer's lens is softmax(lm_head(norm(h)))
of transformers' own hidden state (output_hidden_states), through its own final norm and lm_head; the last
layer's lens is the model's own output distribution. Tiny GPT-2 and Llama built from config objects."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

import transformers

from attnlab.checkpoints.hf import convert
from attnlab.engine import logit_lens, names
from attnlab.engine.logit_lens import LENS_TOP_K, lens_entries
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder, finish
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.views.lens import LensView
from tests.support.hf_tiny import IDS, VOCAB, _model

LAYERS = 3


def gpt2():
    cfg = transformers.GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=LAYERS, n_head=4)
    model, config = _model(transformers.GPT2LMHeadModel, cfg)
    return model, config, model.transformer.ln_f, model.lm_head


def llama():
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=LAYERS,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    model, config = _model(transformers.LlamaForCausalLM, cfg)
    return model, config, model.model.norm, model.lm_head


def traced(model, hf_config):
    """attnlab's recorded run of the converted model, with the lens entries a LiveModel run adds."""
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    rec = Recorder(True)
    with torch.inference_mode():
        module(None, torch.tensor([IDS]), rec=rec)
    trace = finish(rec, config, RunOptions().resolved(config), "cpu")
    trace.entries.update(lens_entries(module, trace.entries, trace.options))
    return module, trace


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def family(request):
    model, hf_config, final_norm, lm_head = {"gpt2": gpt2, "llama": llama}[request.param]()
    with torch.no_grad():
        out = model(input_ids=torch.tensor([IDS]), output_hidden_states=True)
    module, trace = traced(model, hf_config)
    return out, final_norm, lm_head, module, trace


def hf_top_k(final_norm, lm_head, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' hidden state [1, T, d] through its own final norm and lm_head: top-k (probs, ids)."""
    with torch.no_grad():
        top = torch.softmax(lm_head(final_norm(hidden))[0], dim=-1).topk(LENS_TOP_K, dim=-1)
    return top.values, top.indices


def test_every_middle_layer_is_transformers_hidden_state_through_its_norm_and_lm_head(family):
    out, final_norm, lm_head, _module, trace = family
    probs, ids = trace[names.LENS_PROBS], trace[names.LENS_IDS]
    assert probs.shape == ids.shape == (LAYERS + 1, len(IDS), LENS_TOP_K)
    for layer in range(LAYERS):  # hidden_states[LAYERS] is after the final norm: the last row, tested below
        theirs_probs, theirs_ids = hf_top_k(final_norm, lm_head, out.hidden_states[layer])
        assert torch.equal(ids[layer], theirs_ids), layer
        torch.testing.assert_close(probs[layer], theirs_probs, atol=1e-5, rtol=0)


def test_the_last_layer_is_the_models_own_prediction(family):
    out, _norm, _head, _module, trace = family
    theirs = torch.softmax(out.logits[0], dim=-1).topk(LENS_TOP_K, dim=-1)
    assert torch.equal(trace[names.LENS_IDS][-1], theirs.indices)
    torch.testing.assert_close(trace[names.LENS_PROBS][-1], theirs.values, atol=1e-5, rtol=0)
    ours = torch.softmax(trace[names.LOGITS], dim=-1).topk(LENS_TOP_K, dim=-1)  # attnlab's own output
    assert torch.equal(trace[names.LENS_IDS][-1], ours.indices)
    torch.testing.assert_close(trace[names.LENS_PROBS][-1], ours.values, atol=1e-6, rtol=0)


def test_rows_computed_in_small_blocks_are_the_same(family, monkeypatch):
    _out, _norm, _head, module, trace = family
    monkeypatch.setattr(logit_lens, "BLOCK_ELEMENTS", 3 * VOCAB)  # three positions at a time
    again = lens_entries(module, trace.entries, trace.options)  # a new unembedding: nothing remembered
    trace.entries.update(again)
    trace._host.pop(names.LENS_PROBS, None)
    trace._host.pop(names.LENS_IDS, None)
    blocked_probs, blocked_ids = trace.device_value(names.LENS_PROBS), trace.device_value(names.LENS_IDS)
    theirs = torch.softmax(trace[names.LOGITS], dim=-1).topk(LENS_TOP_K, dim=-1)
    assert torch.equal(blocked_ids[-1], theirs.indices)
    torch.testing.assert_close(blocked_probs[-1], theirs.values, atol=1e-6, rtol=0)


def decoder_lm(tiny_model, **changes):
    sizes = dict(d_model=16, n_heads=2, d_ff=32, n_decoder_layers=3, max_len=16)
    return tiny_model("decoder-only", **{**sizes, **changes})


def test_a_live_run_follows_the_final_norm_toggle(tiny_model):
    model = decoder_lm(tiny_model, norm_first=True, final_norm=True, norm="rmsnorm")
    with_norm = model.trace("the black cat sees")
    without = model.trace("the black cat sees", options=RunOptions(final_norm=False))
    for trace in (with_norm, without):  # whatever the run applies, the last row is the run's own output
        assert trace[names.LENS_IDS][-1, :, 0].tolist() == trace[names.PROBS].argmax(-1).tolist()
        top = trace[names.PROBS].topk(LENS_TOP_K, dim=-1).values
        torch.testing.assert_close(trace[names.LENS_PROBS][-1], top, atol=1e-6, rtol=0)
    assert not torch.equal(with_norm[names.LENS_PROBS], without[names.LENS_PROBS])
    views = [view_for(t, stages_for(t)[-1], ViewState()) for t in (with_norm, without)]
    assert [v.norm for v in views if isinstance(v, LensView)] == ["trained", "none"]
    assert "RMSNorm<sub>final</sub>" in explanation_html(stages_for(with_norm)[-1], with_norm)
    assert "switched off" in explanation_html(stages_for(without)[-1], without)


def test_only_decoder_language_models_and_recorded_runs_have_it(tiny_model):
    lm = decoder_lm(tiny_model)
    assert stages_for(lm.trace("the cat"))[-1].kind == names.LENS
    assert names.LENS_PROBS not in lm.trace("the cat", options=RunOptions(record=False))
    translation = tiny_model("encoder-decoder", d_model=16, n_heads=2, d_ff=32, max_len=16)
    trace = translation.trace("the cat", "le chat")
    assert names.LENS_PROBS not in trace and names.LENS not in {s.kind for s in stages_for(trace)}


def test_the_view_names_each_cells_top_token_and_its_top_k(tiny_model):
    model = decoder_lm(tiny_model)
    trace = model.trace("the black cat sees the dog")
    view = view_for(trace, stages_for(trace)[-1], ViewState(), model.output_tokenizer.id_to_token)
    assert isinstance(view, LensView)
    ids, probs = trace[names.LENS_IDS].numpy(), trace[names.LENS_PROBS].numpy()
    np.testing.assert_array_equal(view.matrix.matrix, probs[:, :, 0])
    assert view.matrix.rows == ["embeddings", "layer 1", "layer 2", "layer 3"]
    assert view.matrix.cols == trace["tgt.tokens"]
    r, c = 2, 3
    assert view.cell_texts[r][c] == model.output_tokenizer.id_to_token(int(ids[r, c, 0]))[:6]
    for i, p in zip(ids[r, c], probs[r, c], strict=True):
        assert f"{model.output_tokenizer.id_to_token(int(i))} {p:.1%}" in view.hover[r][c]


def test_the_panel_draws_the_texts_and_reads_out_the_top_k(qapp, tiny_model):
    from attnlab.ui.stages.lens import LensPanel

    model = decoder_lm(tiny_model)
    trace = model.trace("the black cat")
    panel = LensPanel()
    panel.vocab = model.output_tokenizer.id_to_token
    panel.show_stage(trace, stages_for(trace)[-1], ViewState())
    data = panel.shown_data()
    np.testing.assert_array_equal(data["lens"]["matrix"], trace[names.LENS_PROBS].numpy()[:, :, 0])
    texts = [cell.text for cell in panel._texts.texts()]
    assert texts == [t for row in data["cell_texts"] for t in row] and len(texts) == 4 * len(trace["tgt.tokens"])
    assert panel._map.describe_cell(1, 2) == data["hover"][1][2]
    panel.close()


def test_cell_texts_stay_inside_their_cells(qapp):
    from PySide6 import QtGui

    from attnlab.ui.plots.axes import tick_font
    from attnlab.ui.plots.cell_texts import PAD_PX, CellText, CellTexts

    texts = CellTexts(tick_font())
    metrics = QtGui.QFontMetricsF(tick_font())
    line = metrics.height()
    texts.set_texts([CellText(0, 0, "a rather long token that cannot fit", "●", False), CellText(0, 1, "ok", "", True)])
    wide = texts.fitted(QtGui.QTransform.fromScale(6 * line, 1.5 * line))  # cells 6 lines wide, 1.5 high
    (cut, ok) = [shown for _cell, shown, _rect in wide]
    assert cut.startswith("a rather") and cut.endswith("…") and ok == "ok"
    for _cell, shown, rect in wide:
        assert metrics.horizontalAdvance(shown) <= rect.width() - 2 * PAD_PX
    narrow = texts.fitted(QtGui.QTransform.fromScale(1.2 * line, 1.5 * line))  # the short form, or nothing
    assert [shown for _cell, shown, _rect in narrow] == ["●", "ok"][: len(narrow)]
    assert texts.fitted(QtGui.QTransform.fromScale(6 * line, 0.5 * line)) == []  # lower than a line: no text


def test_compare_mode_takes_the_top_1_difference_and_leaves_ids_alone(tiny_model):
    from attnlab.present.compare import ID_NO_DIFFERENCE, compare_stage

    model = decoder_lm(tiny_model, norm_first=True, final_norm=True)
    a = model.trace("the black cat sees")
    b = model.trace("the black cat sees", options=RunOptions(final_norm=False))
    by_name = {e.name: e for e in compare_stage(a, b, stages_for(a)[-1], head=0)}
    probs = by_name[names.LENS_PROBS]
    top_a, top_b = a[names.LENS_PROBS][:, :, 0].numpy(), b[names.LENS_PROBS][:, :, 0].numpy()
    np.testing.assert_array_equal(probs.difference, top_b - top_a)
    assert probs.difference.shape == (4, 5)  # every layer, every position
    ids = by_name[names.LENS_IDS]
    assert ids.difference is None and ids.message == ID_NO_DIFFERENCE


def test_the_lens_projects_on_the_device_the_weights_are_on_when_read(tiny_model):
    """A CPU trace read after a GPU run (the weights moved) projects where the weights are now: the device
    is read at each call, not when the trace was made (on an H200 the lens read failed with a device
    mismatch). The move is simulated with the meta device."""
    model = decoder_lm(tiny_model)
    unembed = logit_lens.Unembedding(model.module, None)
    assert unembed.device.type == "cpu"
    model.module.to("meta")
    assert unembed.device.type == "meta"
