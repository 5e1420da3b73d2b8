"""ALBERT, ELECTRA, XLM-RoBERTa and CamemBERT beyond the agreement test_hf_families.py checks for every case of
hf_tiny_bertish.BERTISH_CASES: the factorised embedding's stage shows what transformers' own modules compute
(E[id], LayerNorm(E[id] + P + T), and its projection), ALBERT's layers are one set of weights and every page and
the schematic say so, ELECTRA's discriminator shows P(replaced) = σ(z) per token, and the settings attnlab cannot
represent are refused in one line naming the config.json field."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine import names
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.engine.trace import Recorder, finish
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stage_keys_for_config, stages_for
from tests.support.hf_tiny import IDS
from tests.support.hf_tiny_bertish import BERTISH_CASES

TEXT = "the black cat sees the small dog"


def opened(name: str):
    """(HF model, attnlab module, its LiveModel trace of TEXT, the stage list) for a case of BERTISH_CASES."""
    case, _ = BERTISH_CASES[name]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    tok = WordTokenizer.train([TEXT + " and the big bird"])
    trace = LiveModel(module.eval(), tok, tok).trace(TEXT, None, RunOptions())
    return model, module, trace, stages_for(trace)


def hf_embeddings(model, name: str):
    """(the embeddings module, the projection to d_model) of transformers' own model."""
    if name.startswith("albert"):
        return model.albert.embeddings, model.albert.encoder.embedding_hidden_mapping_in
    return model.electra.embeddings, model.electra.embeddings_project


@pytest.mark.parametrize("name", ["albert", "electra", "electra-generator"])
def test_the_factorised_stage_shows_transformers_own_two_steps(name):
    model, _module, trace, stages = opened(name)
    ids = torch.as_tensor(trace.numpy(names.side_entry("src", "ids"))).long()[None]  # [1, T]
    embeddings, projection = hf_embeddings(model, name)
    with torch.no_grad():
        token = embeddings.word_embeddings(ids)[0]  # [T, e]: E[id]
        normed = embeddings(input_ids=ids)[0]  # [T, e]: LayerNorm(E[id] + P + T)
        projected = projection(normed[None])[0]  # [T, d]
    assert token.shape[1] == 16 and projected.shape[1] == 32
    stage = next(s for s in stages if s.kind == names.EMBED_PROJ)
    assert [s.key for s in stages].index(stage.key) == [s.key for s in stages].index("src.input") + 1
    view = view_for(trace, stage, ViewState())
    for shown, theirs in ((view.token, token), (view.normed, normed), (view.projected, projected)):
        assert torch.allclose(torch.from_numpy(shown.matrix), theirs, atol=1e-5), shown.title
    assert (view.e, view.d) == (16, 32)
    page = explanation_html(stage, trace)
    assert "LayerNorm(E[id] + P[pos] + T[type]) · W<sub>proj</sub> + b" in page and "16 × 32" in page
    # the layer input stage ends at the 16-wide LayerNorm(sum); the embedding page names the narrow table
    layer_input = view_for(trace, next(s for s in stages if s.key == "src.input"), ViewState())
    assert torch.allclose(torch.from_numpy(layer_input.input.matrix), normed, atol=1e-5)
    assert "vocabulary × e = 16" in explanation_html(next(s for s in stages if s.key == "src.embed"), trace)


def test_the_stage_keys_known_before_a_run_include_the_projection():
    _model, module, trace, stages = opened("albert")
    assert stage_keys_for_config(module.config) == [s.key for s in stages]


def test_albert_runs_one_layer_three_times_and_every_layer_page_says_so():
    model, module, trace, stages = opened("albert")
    layers = list(module.encoder)
    assert len(layers) == 3 and all(layer is layers[0] for layer in layers)
    shared = model.albert.encoder.albert_layer_groups[0].albert_layers[0].attention.query.weight
    assert torch.equal(layers[2].self_attn.w_q.weight, shared)
    layer_stages = [s for s in stages if s.site or s.layer]
    said = "Layers 1–3 share one set of weights"
    assert layer_stages and all(said in explanation_html(s, trace) for s in layer_stages)
    output_page = explanation_html(next(s for s in stages if s.kind == names.LOGITS), trace)
    assert "maps d<sub>model</sub> = 32 back to e = 16" in output_page and "99 × 16" in output_page
    _electra, _m, electra_trace, electra_stages = opened("electra")
    assert not any("share one set" in explanation_html(s, electra_trace) for s in electra_stages if s.site)


def test_the_schematic_says_the_layers_share_their_weights(qtbot):
    from attnlab.ui.plots.schematic import Schematic

    for name, said in (("albert", True), ("electra", False)):
        _model, module, _trace, _stages = opened(name)
        schematic = Schematic()
        qtbot.addWidget(schematic)
        schematic.set_run(module.config, RunOptions().resolved(module.config))
        schematic._lay_out()
        texts = [text for _rect, text, _align in schematic.texts]
        assert ("layers 1–3 share one set of weights" in texts) == said, texts


def test_the_discriminator_shows_p_replaced_per_token_from_transformers_logit():
    model, _module, trace, stages = opened("electra")
    ids = torch.as_tensor(trace.numpy(names.side_entry("src", "ids"))).long()[None]
    with torch.no_grad():
        z = model(input_ids=ids).logits[0]  # [T]: one "replaced?" logit per token
    probs = view_for(trace, next(s for s in stages if s.kind == names.PROBS), ViewState(top_k=100))
    logits = view_for(trace, next(s for s in stages if s.kind == names.LOGITS), ViewState(top_k=100))
    assert sorted(probs.ids) == list(range(len(z)))  # every token, once
    assert torch.allclose(torch.from_numpy(probs.values), torch.sigmoid(z)[probs.ids], atol=1e-5)
    assert torch.allclose(torch.from_numpy(logits.values), z[logits.ids], atol=1e-4)
    assert list(probs.values) == sorted(probs.values, reverse=True)  # the most suspicious first
    assert probs.labels[0].endswith(str(trace[names.side_entry("src", "tokens")][probs.ids[0]]))
    page = explanation_html(next(s for s in stages if s.kind == names.PROBS), trace)
    assert "σ(z" in page and "replaced" in page
    assert [s.title for s in stages[-2:]] == ["replaced? logit z per token", "σ(z) → P(replaced) per token"]


@pytest.mark.parametrize("name", list(BERTISH_CASES))
def test_every_stage_has_its_page_and_view(name):
    _model, _module, trace, stages = opened(name)
    for stage in stages:
        page = explanation_html(stage, trace)
        assert page.startswith("<h3>") and "No explanation" not in page and "not in this run" not in page, stage.key
        assert getattr(view_for(trace, stage, ViewState()), "message", "") == "", stage.key


@pytest.mark.parametrize("name", ["albert", "electra", "electra-generator"])
def test_the_fused_run_agrees_with_the_recorded_one(name):
    _model, module, _trace, _stages = opened(name)
    ids = torch.tensor([IDS])
    with torch.inference_mode():
        fused = module(ids)
        rec = Recorder(True)
        recorded = module(ids, rec=rec)
    assert torch.allclose(fused, recorded, atol=1e-5, rtol=1e-5)


def hf_config_of(name: str) -> dict:
    return BERTISH_CASES[name][0].build()[1]


@pytest.mark.parametrize(
    ("name", "changes", "field"),
    [
        ("albert", {"num_hidden_groups": 2}, "num_hidden_groups"),
        ("albert", {"inner_group_num": 2}, "inner_group_num"),
        ("albert", {"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ("electra", {"position_embedding_type": "relative_key_query"}, "position_embedding_type"),
        ("electra", {"is_decoder": True}, "is_decoder"),
        ("electra-generator", {"hidden_act": "relu"}, "hidden_act"),
        ("xlm-roberta", {"is_decoder": True}, "is_decoder"),
    ],
)
def test_settings_attnlab_cannot_represent_are_refused_in_one_line(name, changes, field):
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config_of(name), **changes})
    assert repr(field) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("kind", ["electra", "albert"])
def test_a_factorised_model_without_a_head_is_refused_naming_embedding_size(kind):
    """Without a head attnlab shows final vectors × the embedding matrix, which a factorised table cannot give."""
    from tests.support.hf_tiny_bertish import albert, electra

    model, hf_config = electra("bare") if kind == "electra" else albert(head=False)
    with pytest.raises(CheckpointError) as err:
        convert(hf_config, model.state_dict())
    assert "'embedding_size'" in str(err.value) and "\n" not in str(err.value)


def test_an_unfactorised_electra_has_no_projection_stage():
    _model, module, trace, stages = opened("electra-unfactorised")
    assert module.config.embed_dim == 0 and names.side_entry("src", names.EMBED_PROJ) not in trace
    assert not any(s.kind == names.EMBED_PROJ for s in stages)


@pytest.mark.parametrize("name", ["xlm-roberta", "camembert"])
def test_xlm_roberta_and_camembert_read_as_roberta(name):
    """The same numbers under RoBERTa's model_type: the layout and the position offset are RoBERTa's."""
    _case, hf_config = BERTISH_CASES[name][0].build()
    assert config_from_hf(hf_config) == config_from_hf({**hf_config, "model_type": "roberta"})
    assert config_from_hf(hf_config).pos_offset == 2


def test_the_panels_draw_the_factorised_stage_and_the_replaced_bars(qtbot):
    """The panels draw exactly the view-models' numbers (they compute nothing)."""
    from attnlab.ui.stages import panel_class_for

    _model, _module, trace, stages = opened("electra")
    for kind in (names.EMBED_PROJ, names.PROBS):
        stage = next(s for s in stages if s.kind == kind)
        panel = panel_class_for(kind)()
        qtbot.addWidget(panel)
        panel.show_stage(trace, stage, ViewState(top_k=100))
        data, view = panel.shown_data(), view_for(trace, stage, ViewState(top_k=100))
        if kind == names.EMBED_PROJ:
            for part in ("token", "normed", "projected"):
                assert (data[part] == getattr(view, part).matrix).all(), part
        else:
            assert data["ids"] == view.ids and (data["values"] == view.values).all()


def _saved_folder(tmp_path, kind: str):
    """A folder as save_pretrained writes it: config.json + weights next to the family's tokenizer files, the
    model's vocabulary the tokenizer's size (the weights re-drawn as hf_tiny does)."""
    import transformers

    from tests.checkpoints.test_tokenizer_bertish import ALBERT_SPM
    from tests.families.test_hf_models import wordpiece_vocab
    from tests.support import tokenizer_layouts as L
    from tests.support.hf_tiny import _sharpen

    folder = tmp_path / kind
    folder.mkdir()
    if kind == "electra":
        vocab = wordpiece_vocab(folder)
        cfg = transformers.ElectraConfig(vocab_size=vocab, embedding_size=16, max_position_embeddings=64)
        cls = transformers.ElectraForPreTraining
    elif kind == "albert":
        (tmp_path / "spm").mkdir()
        spm = L.sentencepiece_model(tmp_path / "spm", "spiece.model", "albert", "unigram", **ALBERT_SPM)
        L.saved_by_transformers(spm, folder, "albert")
        vocab = len(transformers.AutoTokenizer.from_pretrained(str(folder)))
        cfg = transformers.AlbertConfig(vocab_size=vocab, embedding_size=16, max_position_embeddings=64)
        cls = transformers.AlbertForMaskedLM
    else:
        L.sentencepiece_model(folder, "sentencepiece.bpe.model", "xlm-roberta", "unigram")
        vocab = len(transformers.AutoTokenizer.from_pretrained(str(folder)))
        cfg = transformers.XLMRobertaConfig(vocab_size=vocab, max_position_embeddings=66, pad_token_id=1)
        cls = transformers.XLMRobertaForMaskedLM
    for key, value in {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}.items():
        setattr(cfg, key, value)
    cfg.intermediate_size = 48
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    reference = _sharpen(cls(cfg))
    reference.save_pretrained(str(folder))
    return folder, reference


@pytest.mark.parametrize("kind", ["electra", "albert", "xlm-roberta"])
def test_a_saved_folder_opens_with_autotokenizers_ids_and_transformers_numbers(tmp_path, kind):
    import transformers

    import attnlab
    from tests.support.tokenizer_layouts import SENTENCES

    folder, reference = _saved_folder(tmp_path, kind)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = attnlab.load(folder)
    for text in SENTENCES[:3]:
        trace = model.trace(text)
        ids = auto(text)["input_ids"]
        assert trace["src.ids"].tolist() == ids, text
        with torch.no_grad():
            out = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        for i, attention in enumerate(out.attentions):
            assert torch.allclose(trace[f"enc.{i}.self.weights"], attention[0], atol=1e-4)
        assert torch.allclose(trace["src.input"], out.hidden_states[0][0], atol=1e-4)
        ours = trace["logits"][:, 1] if kind == "electra" else trace["logits"]
        assert torch.allclose(ours, out.logits[0], atol=1e-4), (ours - out.logits[0]).abs().max()


@pytest.mark.usefixtures("isolated_settings")
@pytest.mark.parametrize("kind", ["albert", "electra"])
def test_the_app_opens_the_folder_and_every_stage_shows_content(qtbot, tmp_path, kind):
    """File → Open on a saved folder, then every stage: content in each panel, a page for each."""
    from attnlab.ui.window.main_window import MainWindow
    from tests.ui.test_app_imported import WAIT, close, step_everywhere

    folder, _reference = _saved_folder(tmp_path, kind)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    try:
        with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
            w.session.set_src("Hello, world! The cat sat.", debounce=False)
            w.open_checkpoint(str(folder))
        qtbot.waitUntil(lambda: not w.session.busy and w.session.model is not None, timeout=WAIT)
        qtbot.waitUntil(lambda: w.session.model.name == kind and w.session.trace is not None, timeout=WAIT)
        seen = step_everywhere(w)
        assert seen["src.embed_proj"][0]["e"] == 16 and seen["src.embed_proj"][0]["d"] == 32
        if kind == "albert":
            assert "layers 1–2 share one set of weights" in [t for _r, t, _a in w.schematic.texts]
        else:
            assert len(seen[f"out.{names.PROBS}"][0]["ids"]) == min(
                ViewState().top_k, len(w.session.trace["src.tokens"])
            )
    finally:
        close(w)


def test_a_head_ablated_in_one_shared_layer_leaves_the_other_layers_weights_alone():
    """ALBERT's layers are one module; what a run changes in one layer (an ablated head) stays in that layer."""
    _model, module, _trace, _stages = opened("albert")
    ids = torch.tensor([IDS])
    options = RunOptions().with_ablation("enc.1.self", 0, "zero")
    traces = []
    for run_options in (RunOptions(), options, RunOptions()):
        rec = Recorder(True)
        with torch.inference_mode():
            module(ids, options=run_options, rec=rec)
        traces.append(finish(rec, module.config, run_options.resolved(module.config), "cpu"))
    plain, ablated, again = traces
    assert torch.equal(plain["enc.0.out"], ablated["enc.0.out"])  # before the ablated layer: the same
    assert not torch.allclose(plain["enc.1.out"], ablated["enc.1.out"])
    assert torch.equal(plain["logits"], again["logits"])  # nothing stayed behind in the shared module


def test_albert_keeps_its_linear_map_when_embedding_size_equals_hidden_size():
    """ALBERT maps the embeddings by embedding_hidden_mapping_in even when both sizes are 32 (ELECTRA then has
    none): attnlab keeps the map, and agrees with transformers."""
    from tests.support.hf_tiny import Case, compare_with_hf
    from tests.support.hf_tiny_bertish import albert

    model, hf_config = albert(embedding_size=32)
    config, state, _notes = convert(hf_config, model.state_dict())
    assert config.embed_dim == 32 and "src_embed_proj.weight" in state
    errors = compare_with_hf(Case("albert-32", lambda: None, "encoder-only"), model, config, state)
    assert max(errors.values()) <= 1e-4, errors


@pytest.mark.parametrize("kind", ["albert", "electra"])
def test_an_attnlab_checkpoint_saved_from_the_folder_reopens_the_same(tmp_path, kind):
    """save_checkpoint keeps ALBERT's one shared layer once and the new config fields; the reopened model runs
    the same numbers."""
    import attnlab
    from attnlab.checkpoints.native import save_checkpoint

    folder, _reference = _saved_folder(tmp_path, kind)
    model = attnlab.load(folder)
    again = attnlab.load(save_checkpoint(model, tmp_path / f"{kind}.safetensors"))
    assert again.config == model.config and again.config.embed_dim == 16
    # the same numbers up to the last bits: the folder's weights are memory-mapped where the file puts them, the
    # reopened ones where the native file does, and a matrix kernel may sum in another order on other alignments
    torch.testing.assert_close(again.trace(TEXT)["logits"], model.trace(TEXT)["logits"], rtol=0, atol=1e-6)
