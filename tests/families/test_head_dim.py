"""Models whose head_dim x num_attention_heads differs from hidden_size (w-headdim; hf_tiny_headdim.HEADDIM_CASES:
Llama, Mistral, Qwen3, OLMo-2, Gemma, Gemma 2, Gemma 3): they agree with transformers' eager forward (every
layer's attention weights, hidden states, logits ≤ 1e-4 in float32, also through test_hf_families.py), the
toggles that still mean something run, the head re-split offers only counts that keep H·d_k, the projections-off
toggle is refused with its reason, the stages show H·d_k-wide shapes, and a saved folder opens."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("transformers")

import transformers

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf, convert
from attnlab.checkpoints.limits import check_config_sizes
from attnlab.engine.budget import estimate_trace_bytes
from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.option_specs import N_HEADS, PROJECTIONS
from attnlab.engine.options import RunOptions, head_choices
from attnlab.engine.tokenizer import WordTokenizer
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stages_for
from tests.support.hf_tiny import compare_with_hf
from tests.support.hf_tiny_headdim import HEADDIM_CASES, llama, mistral

TOL = 1e-4
TEXT = "the black cat sees the small dog"


@pytest.fixture(scope="module", params=list(HEADDIM_CASES))
def family(request):
    case, _mechanisms = HEADDIM_CASES[request.param]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    return case, model, hf_config, config, state


def module_of(config, state) -> Transformer:
    module = Transformer(config)
    module.load_state_dict(state)  # strict: W_Q [H·d_k, d], W_O [d, H·d_k] as transformers saved them
    return module.eval()


def live_trace(config, state, options: RunOptions | None = None):
    tok = WordTokenizer.train([TEXT])
    trace = LiveModel(module_of(config, state), tok, tok).trace(None, TEXT, options or RunOptions())
    return trace, {s.key: s for s in stages_for(trace)}


def test_the_cases_have_heads_of_their_own_width(family):
    _case, model, hf_config, config, _state = family
    assert config.head_dim == hf_config["head_dim"] and config.d_head == hf_config["head_dim"]
    assert config.attn_width == config.n_heads * hf_config["head_dim"] != config.d_model
    d, hd, h = hf_config["hidden_size"], hf_config["head_dim"], hf_config["num_attention_heads"]
    h_kv = hf_config.get("num_key_value_heads") or h
    ours = Transformer(config).decoder[0].self_attn
    assert ours.w_q.weight.shape == (h * hd, d) and ours.w_o.weight.shape == (d, h * hd)
    assert ours.w_k.weight.shape == ours.w_v.weight.shape == (h_kv * hd, d)
    theirs = dict(model.model.layers[0].self_attn.named_parameters())
    for name, hf_name in (("w_q", "q_proj"), ("w_k", "k_proj"), ("w_v", "v_proj"), ("w_o", "o_proj")):
        if f"{hf_name}.weight" in theirs:  # Phi-3 fuses Q, K, V; Phi names W_O dense
            assert getattr(ours, name).weight.shape == theirs[f"{hf_name}.weight"].shape, name


def test_every_attention_map_hidden_state_and_logit_agrees(family):
    case, model, _hf, config, state = family
    errors = compare_with_hf(case, model, config, state)
    assert len(errors) >= 2 * config.n_decoder_layers + 2
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOL, f"{case.name} {worst} differs by {errors[worst]:.2e}"


def test_the_toggles_that_remain_valid_still_run(family):
    _case, _model, _hf, config, state = family
    base, _ = live_trace(config, state)
    for options in (
        RunOptions(scale=False),
        RunOptions(positional=False),
        *([] if config.parallel_residual else [RunOptions(norm="post")]),  # Phi: no post-norm form
        RunOptions(residual=False),
        RunOptions(n_heads=config.n_heads // 2),
        RunOptions(ablate=(("dec.0.self", 1, "zero"),)),
    ):
        trace, _ = live_trace(config, state, options.validate(config))
        assert torch.isfinite(trace["logits"]).all() and not torch.allclose(trace["logits"], base["logits"]), options


def test_projections_off_is_refused_with_its_reason(family):
    _case, _model, _hf, config, _state = family
    problems = RunOptions(projections=False).problems(config)
    assert len(problems) == 1 and f"d_model = {config.d_model}" in problems[0] and str(config.attn_width) in problems[0]
    control = PROJECTIONS.controls[0]
    assert control.unavailable is not None and "cannot be switched off" in control.unavailable(config, RunOptions())
    plain = dataclasses.replace(config, head_dim=0, qk_norm="none", n_kv_heads=0)  # heads d_model wide together
    assert control.unavailable(plain, RunOptions()) is None and not RunOptions(projections=False).problems(plain)


def test_the_re_split_offers_only_counts_that_keep_the_trained_width(family):
    """Every offered count h divides H·d_k (not d_model), keeps d_k even for rotary and no K/V head cut apart; it
    runs with Q [h, T, H·d_k / h] and a concatenation H·d_k wide; the trained count gives the trained numbers."""
    _case, _model, _hf, config, state = family
    width, choices = config.attn_width, head_choices(config)
    assert config.n_heads in choices and config.n_heads // 2 in choices
    base, _ = live_trace(config, state)
    for h in range(1, 2 * max(width, config.d_model) + 1):
        refused = RunOptions(n_heads=h).problems(config)
        assert (h in choices) is not refused, (h, refused)
        if h in choices:
            turned = config.rotary_dims(width // h)  # Phi turns only a part of each head: that part must be even
            assert width % h == 0 and turned % 2 == 0 and (h * config.kv_heads) % config.n_heads == 0
    for h in choices:
        trace, _ = live_trace(config, state, RunOptions(n_heads=h))
        T = trace["dec.0.self.q"].shape[1]
        assert trace["dec.0.self.q"].shape == (h, T, width // h)
        assert trace["dec.0.self.concat"].shape == (T, width) and trace["dec.0.self.out"].shape == (T, config.d_model)
        if h == config.n_heads:
            assert torch.equal(trace["logits"], base["logits"])
    items = N_HEADS.controls[0].choices(config)
    assert [c.value for c in items] == choices
    assert f"head_dim = {config.head_dim}" in N_HEADS.controls[0].tooltip_for(config)


def test_a_re_split_of_a_narrow_model_refuses_a_count_that_only_divides_d_model():
    """Mistral-Nemo's kind (H·d_k < d_model): 32 divides d_model 32 but not H·d_k 16, and is refused by name."""
    model, hf_config = mistral()
    config, _state, _ = convert(hf_config, model.state_dict())
    assert config.attn_width == 16 and 32 not in head_choices(config)
    (problem,) = RunOptions(n_heads=32).problems(config)
    assert "H·d_k" in problem and "[1, 2, 4, 8, 16]" in problem


def test_the_stages_show_the_heads_own_width():
    model, hf_config = llama()
    config, state, _ = convert(hf_config, model.state_dict())
    trace, stages = live_trace(config, state)
    display = ViewState()
    concat = view_for(trace, stages["dec.0.self.concat"], display)
    T = trace["dec.0.self.q"].shape[1]
    assert concat.matrix.matrix.shape == (T, 64) and concat.head_width == 16 and len(concat.boundaries) == 3
    assert "H·d_k = 64 (not d_model = 32)" in concat.note
    out = view_for(trace, stages["dec.0.self.attn_out"], display)
    assert out.matrix.matrix.shape == (T, 32) and "W_O (64 × 32)" in out.note
    qkv = explanation_html(stages["dec.0.self.qkv"], trace)
    assert "head_dim = 16" in qkv and "32 × 64" in qkv and "32 × 32" in qkv  # W_Q d x H·d_k, W_K d x H_kv·d_k
    assert "d<sub>model</sub> / H" not in qkv
    assert "64 × 32" in explanation_html(stages["dec.0.self.attn_out"], trace)
    assert "not d<sub>model</sub> = 32" in explanation_html(stages["dec.0.self.concat"], trace)


def test_the_trace_size_estimate_counts_the_heads_own_width():
    model, hf_config = llama()
    config, state, _ = convert(hf_config, model.state_dict())
    for options in (RunOptions(), RunOptions(n_heads=8)):
        trace, _ = live_trace(config, state, options)
        T = trace["dec.0.self.q"].shape[1]
        estimate, real = estimate_trace_bytes(config, options, 0, T), trace.stored_bytes()
        assert abs(estimate - real) <= 0.10 * real, (estimate, real)


def test_the_parameter_count_counts_the_heads_own_width():
    base = ModelConfig(arch="decoder-only", d_model=32, n_heads=4, n_kv_heads=2, d_ff=48, n_decoder_layers=2)
    for head_dim in (4, 16):
        wide = dataclasses.replace(base, head_dim=head_dim)
        built = sum(p.numel() for p in Transformer(wide).parameters())
        plain = sum(p.numel() for p in Transformer(base).parameters())
        assert wide.parameter_count() - base.parameter_count() == built - plain != 0


def test_a_config_wider_than_its_tensors_names_head_dim():
    model, hf_config = llama()
    config, state, _ = convert(hf_config, model.state_dict())
    shapes = {k: tuple(v.shape) for k, v in state.items()}
    assert check_config_sizes(config, shapes) == []
    (problem,) = check_config_sizes(dataclasses.replace(config, head_dim=32), shapes)
    assert "head_dim 32" in problem and "head_dim should be 16" in problem


def test_head_dim_is_read_as_each_family_reads_it():
    model, hf_config = llama()
    assert config_from_hf({**hf_config, "head_dim": 8}).head_dim == 0  # 8 x 4 = hidden 32: as before
    assert config_from_hf({**hf_config, "head_dim": None}).head_dim == 0  # LlamaConfig: hidden / heads
    assert config_from_hf({**hf_config, "head_dim": 24}).attn_width == 96
    _m, qwen = HEADDIM_CASES["qwen3-headdim"][0].build()
    assert config_from_hf({k: v for k, v in qwen.items() if k != "head_dim"}).head_dim == 128  # Qwen3Config's
    _m, gemma = HEADDIM_CASES["gemma-headdim"][0].build()
    assert config_from_hf({k: v for k, v in gemma.items() if k != "head_dim"}).head_dim == 256  # GemmaConfig's
    _m, nemo = mistral()
    assert config_from_hf({**nemo, "head_dim": 0}).head_dim == 0  # Mistral: `head_dim or hidden // heads`
    with pytest.raises(CheckpointError, match="'head_dim'"):
        config_from_hf({**hf_config, "head_dim": 0})  # Llama reads 0 as a head of no numbers


def test_a_saved_folder_opens_and_agrees(tmp_path):
    pytest.importorskip("sentencepiece")
    pytest.importorskip("google.protobuf")
    import attnlab
    from tests.support.tokenizer_layouts import sentencepiece_model

    folder = sentencepiece_model(tmp_path, "tokenizer.model", "llama")
    cfg = transformers.LlamaConfig(
        vocab_size=400,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    reference = transformers.LlamaForCausalLM(cfg).eval()
    reference.save_pretrained(str(folder))
    model = attnlab.load(folder)
    assert model.config.head_dim == 16 and model.config.attn_width == 64
    text = "the lazy dog"
    t = model.trace(text)
    ids = transformers.AutoTokenizer.from_pretrained(str(folder))(text)["input_ids"]
    assert t["tgt.ids"].tolist() == ids
    with torch.no_grad():
        logits = reference(torch.tensor([ids])).logits[0]
    assert (t["logits"] - logits).abs().max() <= TOL


def test_a_native_checkpoint_keeps_head_dim(tmp_path):
    """attnlab's own .safetensors file stores head_dim with the config and loads the same model back."""
    import attnlab
    from attnlab.checkpoints.native import save_checkpoint
    from tests.support.tiny import build_tiny_model

    live = build_tiny_model(
        "decoder-only", d_model=32, n_heads=4, n_kv_heads=2, head_dim=4, positional="rotary", d_ff=48
    )
    assert live.config.attn_width == 16
    path = save_checkpoint(live, tmp_path / "nemo.safetensors")
    again = attnlab.load(path)
    assert again.config == live.config
    assert torch.equal(again.trace(None, TEXT)["logits"], live.trace(None, TEXT)["logits"])


@pytest.mark.parametrize(
    "changes, options",
    [
        ({"head_dim": 16, "qk_norm": "head"}, RunOptions()),  # heads 64 wide together over d 32, QK-norm per head
        ({"head_dim": 4, "qk_norm": "whole"}, RunOptions(n_heads=8)),  # 16 wide, re-split into 8 heads of 2
        ({"head_dim": 16, "attn_softcap": 2.0}, RunOptions()),  # soft-capped: step by step on every path
    ],
)
def test_the_lazy_eager_and_fused_paths_agree(changes, options):
    """The recorded forward derives scores … weights from Q, K (lazy), the eager recorder keeps every step, the
    non-recording forward takes the fused kernel: the same numbers with heads of their own width."""
    from attnlab.engine import names
    from tests.engine.test_trace_derived import assert_equal_values, run_both
    from tests.support.tiny import build_tiny_model

    model = build_tiny_model(
        "decoder-only", d_model=32, n_heads=4, n_kv_heads=2, positional="rotary", rotary_layout="half", **changes
    )
    lazy, eager, eager_logits = run_both(model, options)
    for site in lazy.sites():
        for step in ("scores", "scaled", "masked", "weights", "context", "concat", "out"):
            name = names.site_entry(site, step)
            assert_equal_values(name, lazy[name], eager[name], tol=1e-5)
        assert lazy[names.site_entry(site, "concat")].shape[-1] == model.config.attn_width
    ids = lazy.device_value("tgt.ids")[None]
    with torch.inference_mode():
        fused = model.module(None, ids, options=options)[0]  # [T, V]: nothing recorded
    assert torch.allclose(fused, lazy["logits"], atol=1e-5, rtol=1e-5)
    assert torch.allclose(eager_logits, lazy["logits"], atol=1e-5)
