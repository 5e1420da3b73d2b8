"""The BART family's importer (checkpoints/hf/bart.py) beyond the forward comparison of test_hf_families.py:
an untied lm_head, the refusals (one line naming the config.json field), the stages and pages an imported
model shows (the embedding LayerNorm in the layer-input formula, the decoder's start token, mBART's language
code), and Whisper's one-line refusal."""

from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")
from attnlab.checkpoints.errors import CheckpointError  # noqa: E402
from attnlab.checkpoints.hf import config_from_hf, convert  # noqa: E402
from attnlab.checkpoints.hf_folder import load_hf_folder  # noqa: E402
from attnlab.engine.live import LiveModel  # noqa: E402
from attnlab.engine.model import Transformer  # noqa: E402
from attnlab.engine.names import embed_norm, norm_entry  # noqa: E402
from attnlab.engine.options import RunOptions  # noqa: E402
from attnlab.engine.tokenizer import WordTokenizer  # noqa: E402
from attnlab.present.explain import explanation_html  # noqa: E402
from attnlab.present.stages import stages_for  # noqa: E402
from tests.support import hf_tiny_bart as H  # noqa: E402
from tests.support.hf_tiny import Case, compare_with_hf  # noqa: E402

TOL = 1e-4


def test_an_untied_lm_head_gets_its_own_projection_and_agrees():
    case = Case("bart-untied", lambda: H.bart(tie_word_embeddings=False), "encoder-decoder")
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    assert not config.tie_output and "out_proj.weight" in state and "out_bias" not in state
    assert not config.share_embeddings  # transformers 5 unties the encoder's and decoder's tables too
    assert torch.equal(state["out_proj.bias"], model.final_logits_bias[0])
    errors = compare_with_hf(case, model, config, state)
    assert max(errors.values()) <= TOL, errors


@pytest.mark.parametrize(
    ("family", "norm_first", "positional", "embed_norm_on", "offset"),
    [
        ("bart", False, "learned", True, 2),
        ("mbart", True, "learned", True, 2),
        ("pegasus", True, "sinusoidal", False, 0),
    ],
)
def test_each_family_reads_as_its_modeling_file_builds_it(family, norm_first, positional, embed_norm_on, offset):
    _model, hf_config = getattr(H, family)()
    config = config_from_hf(hf_config)
    assert (config.norm_first, config.final_norm) == (norm_first, norm_first)
    assert (config.positional, config.embed_norm, config.pos_offset) == (positional, embed_norm_on, offset)
    assert config.share_embeddings and config.has_bias("logits") and config.activation == "gelu"
    if positional == "sinusoidal":
        assert config.sinusoidal_layout == "marian"  # Pegasus: sines in the first half, cosines in the second


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"decoder_attention_heads": 2}, "decoder_attention_heads"),
        ({"decoder_ffn_dim": 64}, "decoder_ffn_dim"),
        ({"activation_function": "gelu_fast"}, "activation_function"),
        ({"d_model": None}, "d_model"),
    ],
)
def test_settings_attnlab_cannot_represent_are_refused_naming_the_field(changes, field):
    _model, hf_config = H.bart()
    with pytest.raises(CheckpointError) as err:
        config_from_hf({**hf_config, **changes})
    assert repr(field) in str(err.value) and "\n" not in str(err.value)


def test_weights_that_are_not_the_family_are_refused():
    """A decoder embedding that is not the shared table, and Pegasus positions that are not its sinusoids."""
    model, hf_config = H.bart()
    state = dict(model.state_dict())
    state["model.decoder.embed_tokens.weight"] = state["model.decoder.embed_tokens.weight"] + 1.0
    with pytest.raises(CheckpointError, match="tie_word_embeddings"):
        convert(hf_config, state)
    model, hf_config = H.pegasus()
    state = dict(model.state_dict())
    state["model.encoder.embed_positions.weight"] = torch.randn_like(state["model.encoder.embed_positions.weight"])
    with pytest.raises(CheckpointError, match="sinusoidal"):
        convert(hf_config, state)


def live_model(family: str) -> LiveModel:
    model, hf_config = getattr(H, family)()
    config, state, _ = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    tok = WordTokenizer.train(["the black cat sees the small dog and the big bird"])
    return LiveModel(module.eval(), tok, tok)


@pytest.mark.parametrize("family", ["bart", "mbart", "pegasus"])
def test_every_stage_has_its_page_and_the_input_formula_is_the_models(family):
    trace = live_model(family).trace("the black cat sees the small dog", "the big bird", RunOptions())
    stages = stages_for(trace)
    assert len(stages) > 20
    for stage in stages:
        page = explanation_html(stage, trace)
        assert page.startswith("<h3>") and "No explanation" not in page and "not in this run" not in page, stage.key
    layer_input = next(s for s in stages if s.kind == "input" and s.side == "src")
    page = explanation_html(layer_input, trace)
    if family == "pegasus":
        assert "LayerNorm" not in page.split("</p>")[0] and norm_entry(embed_norm("src"), "out") not in trace
    else:  # the sum goes through layernorm_embedding, rows read at p + 2
        pos_page = explanation_html(next(s for s in stages if s.kind == "pos" and s.side == "tgt"), trace)
        assert "W<sub>pos</sub>[pos + 2]" in pos_page  # the decoder's positions too start at row 2
        scale = " · √" if family == "mbart" else ""  # the tiny mBART scales its embeddings
        assert f"X = LayerNorm<sub>emb</sub>(E[id]{scale}" in page and "+ P[pos + 2])" in page
        assert norm_entry(embed_norm("src"), "out") in trace


def test_the_tokens_page_names_the_start_token_and_the_language_code():
    from attnlab.present.seq2seq_tokens import special_token_sentences

    src = special_token_sentences("src", ["▁the", "▁cat", "</s>", "ro_RO"], True)
    tgt = special_token_sentences("tgt", ["</s>", "en_XX", "▁le"], True)
    assert "ro_RO is not a word but a language code" in src[0]
    assert "starts from &lt;/s&gt;" in tgt[0] and "en_XX is a language code" in tgt[1]
    assert "as its start token" in special_token_sentences("tgt", ["ro_RO", "▁le"], True)[1]  # mBART cc25
    assert special_token_sentences("tgt", ["<s>", "le"], True) == []  # attnlab's own models say nothing new
    assert special_token_sentences("tgt", ["</s>", "le"], False) == []  # decoder-only prompts: nothing


def test_whisper_is_refused_in_one_line_naming_why(tmp_path):
    hf_config = transformers.WhisperConfig(
        vocab_size=99,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
    ).to_dict()
    with pytest.raises(CheckpointError) as err:
        config_from_hf(hf_config)
    line = str(err.value)
    assert "\n" not in line and "'model_type'" in line and "'whisper'" in line and "audio encoder" in line
    (tmp_path / "config.json").write_text(json.dumps(hf_config), encoding="utf-8")
    with pytest.raises(CheckpointError) as err:
        load_hf_folder(tmp_path)
    assert "audio encoder" in str(err.value) and "attnlab opens these model types" not in str(err.value)


def test_generation_settings_greedy_decoding_does_not_apply_are_noted():
    """bart-large-cnn's config.json asks generate() for beams, n-gram blocking and a minimum length."""
    from attnlab.checkpoints.hf import config_and_notes

    _model, hf_config = H.bart()
    _config, notes = config_and_notes({**hf_config, "num_beams": 4, "no_repeat_ngram_size": 3, "min_length": 56})
    said = [n for n in notes if "greedily" in n]
    assert len(said) == 1 and all(s in said[0] for s in ("num_beams 4", "no_repeat_ngram_size 3", "min_length 56"))
    plain = {**hf_config, "num_beams": 1, "forced_eos_token_id": None}
    assert not [n for n in config_and_notes(plain)[1] if "greedily" in n]
