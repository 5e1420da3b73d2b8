"""DeBERTa-v2/v3's disentangled attention, map by map, against transformers' own DisentangledSelfAttention:
each recorded term (c2c, c2p, p2c) equals what transformers computes for it on the tiny models of
hf_tiny_deberta.py (the whole-model agreement is test_hf_families.py's, over the same cases); the lazy, eager
and non-recording paths agree; what attnlab cannot represent is refused in one line naming the field."""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.engine import names
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder, finish
from tests.support.hf_tiny import IDS
from tests.support.hf_tiny_deberta import DEBERTA_CASES

TOL = 1e-4  # the target for fp32 agreement; raw scores reach ~20, so float noise is ~2e-5


def built(name: str):
    case, _ = DEBERTA_CASES[name]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    return model, hf_config, config, module.eval()


def trace_of(config, module, options: RunOptions | None = None, eager: bool = False):
    rec = Recorder(True, eager=eager)
    options = options or RunOptions()
    with torch.inference_mode():
        logits = module(torch.tensor([IDS]), rec=rec, options=options)
    return logits, finish(rec, config, options.resolved(config), "cpu")


def their_terms(model, layer: int, terms: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """transformers' own pieces of one layer, on its own hidden states: Qc Kcᵀ [H, T, T], and the position
    bias disentangled_attention_bias returns with only `terms` switched on, [H, T, T] (÷ √(dk · full factor))."""
    base = getattr(model, "deberta", model)
    ids = torch.tensor([IDS])
    with torch.no_grad():
        hidden = base(input_ids=ids, output_hidden_states=True).hidden_states[layer]  # [1, T, d]
        attention = base.encoder.layer[layer].attention.self
        q = attention.transpose_for_scores(attention.query_proj(hidden), attention.num_attention_heads)
        k = attention.transpose_for_scores(attention.key_proj(hidden), attention.num_attention_heads)
        rel = base.encoder.get_rel_embedding()
        rel_pos = base.encoder.get_rel_pos(hidden)
        factor = 1 + sum(t in attention.pos_att_type for t in ("c2p", "p2c"))
        kept = attention.pos_att_type
        attention.pos_att_type = terms
        try:
            bias = attention.disentangled_attention_bias(q, k, rel_pos, rel, factor)
        finally:
            attention.pos_att_type = kept
    scale = math.sqrt(q.shape[-1] * factor)
    return q @ k.transpose(-1, -2), bias, torch.tensor(scale)


@pytest.mark.parametrize("name", list(DEBERTA_CASES))
def test_each_term_is_transformers_own(name):
    model, _hf, config, module = built(name)
    _logits, trace = trace_of(config, module)
    for layer in range(config.n_encoder_layers):
        site = names.site(names.layer("enc", layer), "self")
        c2c_name, c2p_name, p2c_name = names.term_entries(site)
        content, _, scale = their_terms(model, layer, [])
        assert (trace[c2c_name] - content).abs().max() <= TOL
        for term, entry in (("c2p", c2p_name), ("p2c", p2c_name)):
            if term not in config.disentangled:
                assert entry not in trace
                continue
            _, bias, _ = their_terms(model, layer, [term])
            ours = trace[entry] / scale  # the recorded term is before the division, like Qc Kcᵀ
            assert ours.abs().max() > 0.1, f"{name} layer {layer} {term} is too small to test anything"
            assert (ours - bias).abs().max() <= TOL, f"{name} layer {layer} {term}"
        _, both, _ = their_terms(model, layer, list(config.disentangled))
        total = trace[c2c_name] + sum(trace[e] for e in (c2p_name, p2c_name) if e in trace)
        assert (trace[names.site_entries(site).scores] - total).abs().max() <= TOL  # the score is their sum
        assert (trace[names.site_entries(site).scaled] - (content / scale + both)).abs().max() <= TOL


def test_the_two_position_terms_read_the_same_rows_with_different_content():
    """c2p meets row δ(i, j) with query i's content, p2c (gathered key by key on the negated, transposed
    distance) meets the same row with key j's: the buckets are odd (bucket(−x) = −bucket(x)), the maps differ."""
    _model, _hf, config, module = built("deberta-v3")
    _logits, trace = trace_of(config, module)
    distance = trace[names.rel_entry("enc", "distance")]
    assert torch.equal(distance, -distance.T) and distance.abs().max() > config.rel_buckets // 2  # log buckets
    _c2c, c2p, p2c = names.term_entries("enc.0.self")
    assert not torch.allclose(trace[c2p], trace[p2c], atol=1e-3)


def test_the_distances_are_transformers_buckets():
    from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position

    for name in DEBERTA_CASES:
        _model, _hf, config, module = built(name)
        _logits, trace = trace_of(config, module)
        x = torch.zeros(1, len(IDS), 1)
        theirs = build_relative_position(x, x, config.rel_buckets or -1, config.rel_max_distance)[0]
        assert torch.equal(trace[names.rel_entry("enc", "distance")], theirs), name


@pytest.mark.parametrize("name", list(DEBERTA_CASES))
def test_lazy_eager_and_unrecorded_runs_agree(name):
    _model, _hf, config, module = built(name)
    logits, lazy = trace_of(config, module)
    eager_logits, eager = trace_of(config, module, eager=True)
    with torch.inference_mode():
        fast = module(torch.tensor([IDS]))  # nothing recorded: the terms folded into the fused kernel's mask
    assert (fast - logits).abs().max() <= TOL and torch.equal(logits, eager_logits)
    site = "enc.1.self"
    for entry in (*names.term_entries(site), *names.site_entries(site)):
        if entry in eager:
            assert (lazy[entry] - eager[entry]).abs().max() <= TOL, entry


def test_positions_off_drops_the_position_terms_and_keeps_the_scale():
    _model, _hf, config, module = built("deberta-v3")
    _logits, trace = trace_of(config, module, RunOptions(positional=False))
    c2c, c2p, _p2c = names.term_entries("enc.0.self")
    n = names.site_entries("enc.0.self")
    assert c2p not in trace and (trace[n.scores] - trace[c2c]).abs().max() <= TOL  # the content term alone
    assert (trace[n.scaled] - trace[n.scores] / math.sqrt(3 * config.d_head)).abs().max() <= TOL
    assert trace[n.scores].shape == (4, len(IDS), len(IDS))
    # without the position terms nothing tells the positions apart: a permuted input permutes the output
    perm = [3, 1, 7, 0, 2, 6, 4, 5]
    rec = Recorder(True)
    with torch.inference_mode():
        out = module(torch.tensor([IDS]), options=RunOptions(positional=False))
        shuffled = module(torch.tensor([[IDS[p] for p in perm]]), rec=rec, options=RunOptions(positional=False))
    assert (out[0, perm] - shuffled[0]).abs().max() <= 1e-4


def test_a_head_resplit_splits_the_position_projections_too():
    _model, _hf, config, module = built("deberta-v2-own-keys")
    _logits, trace = trace_of(config, module, RunOptions(n_heads=2))
    _c2c, c2p, _p2c = names.term_entries("enc.0.self")
    assert trace[c2p].shape == (2, len(IDS), len(IDS))
    n = names.site_entries("enc.0.self")
    assert (trace[n.scaled] - trace[n.scores] / math.sqrt(3 * config.d_model // 2)).abs().max() <= TOL


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"conv_kernel_size": 3}, "conv_kernel_size"),
        ({"embedding_size": 16}, "embedding_size"),
        ({"pos_att_type": ["c2p", "p2p"]}, "pos_att_type"),
        ({"attention_head_size": 4}, "attention_head_size"),
        ({"position_buckets": 4, "max_relative_positions": 3}, "rel_buckets"),
    ],
)
def test_what_attnlab_cannot_represent_is_refused_in_one_line(change, field):
    _model, hf_config, _config, _module = built("deberta-v3")
    with pytest.raises(CheckpointError) as refused:
        config_from_hf({**hf_config, **change})
    message = str(refused.value)
    assert field in message and "\n" not in message


def test_without_relative_attention_it_is_a_bert_like_encoder():
    _model, hf_config, _config, _module = built("deberta-v3")
    config = config_from_hf({**hf_config, "relative_attention": False, "position_biased_input": True})
    assert config.disentangled == () and config.positional == "learned"


def test_a_saved_folder_opens_with_its_spm_tokenizer_and_agrees(tmp_path):
    """A folder as save_pretrained writes it, with DeBERTa-v3's spm.model: attnlab opens it (importer, tokenizer,
    LiveModel) and its trace of a typed sentence agrees with transformers on the ids AutoTokenizer gives."""
    pytest.importorskip("sentencepiece")
    import shutil

    import transformers

    from attnlab.checkpoints.loader import load_checkpoint
    from tests.checkpoints.test_tokenizer_layouts import DEBERTA_SPM
    from tests.support import tokenizer_layouts as L

    (tmp_path / "spm").mkdir()
    spm = L.sentencepiece_model(tmp_path / "spm", "spm.model", "deberta-v2", "unigram", **DEBERTA_SPM)
    auto = transformers.AutoTokenizer.from_pretrained(str(spm))
    case, _ = DEBERTA_CASES["deberta-v3"]
    model, _hf = case.build()
    model.resize_token_embeddings(len(auto))  # the vocabulary the tokenizer numbers
    folder = tmp_path / "model"
    model.save_pretrained(str(folder))
    shutil.copy(spm / "spm.model", folder / "spm.model")
    live = load_checkpoint(folder)
    text = "the small dog sees the black cat"
    trace = live.trace(text, "")
    ids = auto(text)["input_ids"]
    assert trace["src.ids"].tolist() == ids
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    for layer, theirs in enumerate(out.attentions):
        assert (trace[f"enc.{layer}.self.weights"] - theirs[0]).abs().max() <= TOL
    assert (trace["logits"] - out.logits[0]).abs().max() <= TOL
    # padded with 4 [PAD]: the real tokens agree with transformers given the attention mask (DeBERTa also masks the
    # padded queries and zeroes their embeddings, which changes only the padded positions)
    short = "the small dog"
    padded = live.trace(short, "", RunOptions(pad_to=len(auto(short)["input_ids"]) + 4))
    real = padded["src.ids"] != auto.pad_token_id  # [T]
    assert int((~real).sum()) == 4
    with torch.no_grad():
        out = model(input_ids=padded["src.ids"][None], attention_mask=real[None].long(), output_attentions=True)
    for layer, theirs in enumerate(out.attentions):
        ours = padded[f"enc.{layer}.self.weights"][:, real]  # [H, real queries, T]
        assert (ours[:, :, real] - theirs[0][:, real][:, :, real]).abs().max() <= TOL
        assert ours[:, :, ~real].abs().max() == 0  # no weight on padding
    assert (padded["logits"][real] - out.logits[0][real]).abs().max() <= TOL


@pytest.mark.parametrize("name", list(DEBERTA_CASES))
def test_the_parameter_count_counts_the_relative_parts(name):
    """What the config says the relative table, its norm and the position projections add (known before the
    model is built, for attnlab's size caps) is what the module holds."""
    import dataclasses

    _model, _hf, config, module = built(name)
    plain = dataclasses.replace(config, rel_terms="", rel_span=0, rel_norm=False, rel_share_key=False)
    held = sum(p.numel() for n, p in module.named_parameters() if n.startswith("rel.") or ".w_p" in n)
    assert held > 0 and config.parameter_count() - plain.parameter_count() == held


@pytest.mark.parametrize(
    "options",
    [
        RunOptions().with_causal("enc.self", True),
        RunOptions(projections=False),
        RunOptions(n_heads=8, norm="pre"),
        RunOptions(scale=False),
    ],
    ids=["causal encoder", "projections off", "eight heads, pre-norm", "scale off"],
)
def test_the_fused_path_folds_the_terms_as_the_steps_add_them(options):
    """With nothing recorded the terms go into the fused kernel's mask (a causal-only mask included, which a
    plain run leaves to the kernel); the logits equal the step-by-step recording's."""
    _model, _hf, config, module = built("deberta-v3")
    options = options.validate(config)
    recorded, _trace = trace_of(config, module, options)
    with torch.inference_mode():
        fast = module(torch.tensor([IDS]), options=options)
    base, _ = trace_of(config, module)
    assert (fast - recorded).abs().max() <= TOL and not torch.allclose(recorded, base)
