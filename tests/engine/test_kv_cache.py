"""Generation with a KV cache (engine/kv_cache.py, engine/generation.py): each step's rows against the same
rows of one whole-sequence run, for a decoder with learned positions (GPT-2), grouped-query attention with
rotary positions (Llama), soft-capping and a sliding window (Gemma 2) and an encoder-decoder (Marian), each
built from transformers' own config classes and converted by attnlab's readers.

Bit for bit: a recorded attention pads its keys and sums weights @ V in fixed groups (engine/row_stable.py),
so a step's row, over its t + 1 keys, has the bits of the whole run's row t, over all T keys (the later ones
blocked); every other step is the same product on a row (kv_cache.BLOCK). Compared with torch.equal."""

from __future__ import annotations

import pytest
import torch
import transformers

from attnlab.checkpoints.hf import convert
from attnlab.engine import generation, kv_cache, names, row_stable
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder
from tests.support import hf_tiny, hf_tiny_norms
from tests.support.kv_timeline import differences, timeline, whole_trace
from tests.support.tiny import build_tiny_model

IDS = [5, 17, 3, 88, 42, 7, 9, 61, 11, 23, 40, 2, 19, 33, 8, 70, 4, 55]
BUILDERS = {"gpt2": hf_tiny.gpt2, "llama-gqa": hf_tiny.llama, "gemma2": hf_tiny_norms.gemma2, "marian": hf_tiny.marian}


def module_of(build) -> Transformer:
    model, hf_config = build()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    return module.eval()


@pytest.fixture(scope="module", params=list(BUILDERS))
def family(request):
    module = module_of(BUILDERS[request.param])
    src = torch.tensor([hf_tiny.IDS]) if module.config.has_encoder else None
    return request.param, module, src


@pytest.mark.parametrize("n_prompt", [5])
def test_each_step_row_is_the_whole_runs_row_bit_for_bit(family, n_prompt):
    _name, module, src = family
    ids = torch.tensor([IDS])
    steps = timeline(module, src, ids, n_prompt)
    assert [first for first, _ in steps] == [0, *range(n_prompt, len(IDS))]
    worst = differences(steps, whole_trace(module, src, ids))
    for step_name in ("q", "k", "v", "weights", "context"):  # every site's steps were compared
        assert any(names.step_of(n) == step_name for n in worst)
    assert names.LOGITS in worst
    assert {n: d for n, d in worst.items() if d != 0.0} == {}  # every entry torch.equal, step after step


def long_gpt2():
    cfg = transformers.GPT2Config(vocab_size=hf_tiny.VOCAB, n_positions=96, n_embd=32, n_layer=2, n_head=4)
    return hf_tiny._model(transformers.GPT2LMHeadModel, cfg)


def long_llama():  # grouped-query: 4 query heads, 2 K/V heads
    cfg = transformers.LlamaConfig(
        vocab_size=hf_tiny.VOCAB,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=96,
    )
    return hf_tiny._model(transformers.LlamaForCausalLM, cfg)


@pytest.mark.parametrize("build", [long_gpt2, long_llama])
def test_rows_stay_equal_past_a_key_group(build):
    """Steps on both sides of row_stable.KEY_GROUP keys (the padding grows by a group) and a whole run longer
    than one group: still the same bits."""
    module = module_of(build)
    n = row_stable.KEY_GROUP + 6
    ids = torch.tensor([[(7 * i + 3) % hf_tiny.VOCAB for i in range(n)]])
    steps = timeline(module, None, ids, row_stable.KEY_GROUP - 3)
    worst = differences(steps, whole_trace(module, None, ids))
    assert worst and {name: d for name, d in worst.items() if d != 0.0} == {}


def test_a_step_computes_one_row_against_the_whole_cache(family):
    _name, module, src = family
    cfg = module.config
    steps = timeline(module, src, torch.tensor([IDS[:9]]), 6)
    first, rows = steps[-1]  # position 8
    site = names.site(names.layer("dec", 0), "self")
    n = names.site_entries(site)
    assert first == 8
    assert rows[n.weights].shape == (cfg.n_heads, 1, 9)  # one row over keys 0 … 8
    assert rows[n.k].shape == (cfg.kv_heads, 9, cfg.d_head)  # the cache: one K head per group of Q heads
    assert rows[names.LOGITS].shape[-2] == 1
    assert torch.allclose(rows[n.weights].sum(-1), torch.ones(cfg.n_heads, 1))


def test_the_cache_grows_by_its_bytes_per_token():
    module = module_of(hf_tiny.llama)  # 4 query heads share 2 K/V heads
    cfg = module.config
    run = kv_cache.CachedRun(RunOptions().resolved(cfg))
    with torch.inference_mode():
        kv_cache.prefill(module, run, torch.tensor([IDS[:5]]), Recorder(False), None)
        kv_cache.step(module, run, 7, Recorder(False))
    held = sum(c.k.nbytes + c.v.nbytes for c in run.sites.values())  # what the cache's tensors take
    assert run.length == 6 and all(c.length == 6 for c in run.sites.values())
    per_token = kv_cache.bytes_per_token(cfg.n_decoder_layers, cfg.kv_heads, cfg.d_head, 4)
    assert held == 6 * per_token
    assert cfg.kv_heads < cfg.n_heads


@pytest.mark.parametrize("arch", ["decoder-only", "encoder-decoder"])
def test_generate_chooses_what_the_whole_sequence_runs_choose(arch):
    model = build_tiny_model(arch, never_ends=True)
    src = "the black cat sees the small dog"
    steps = list(model.generate(src, max_new_tokens=5))
    assert all(step.info["cached"] for step in steps)
    ids = steps[-1].info["ids"]
    prompt = len(ids) - len(steps)
    for k, step in enumerate(steps):  # re-trace the sequence so far, as generation did before the cache
        whole = model.trace(src=src if arch == "encoder-decoder" else None, tgt=ids[: prompt + k])
        assert int(whole.read(names.PROBS, -1).argmax()) == step.info["next_id"]
    assert steps[0].info["rows"][0] == 0 and steps[1].info["rows"][1] - steps[1].info["rows"][0] == 1


def test_options_the_cache_cannot_serve_re_trace_each_step():
    model = build_tiny_model("decoder-only", never_ends=True)
    options = RunOptions(scale=False)
    steps = list(model.generate("the black cat", max_new_tokens=2, options=options))
    assert not steps[-1].info["cached"] and "scale" in steps[-1].info["uncached"]


def test_the_whole_trace_of_the_last_step_holds_every_row():
    """What `attnlab trace --generate` saves: the last step's input traced whole, with what the step chose."""
    model = build_tiny_model("decoder-only", never_ends=True)
    steps = list(model.generate("the black cat", max_new_tokens=3))
    whole = generation.whole_trace(model, "the black cat", "", steps[-1], RunOptions())
    expected = model.trace(tgt=steps[-1].info["ids"][:-1])  # the step ran the ids before the token it chose
    tokens, weights = names.side_entry("tgt", "tokens"), names.site_entry(names.site("dec.1", "self"), "weights")
    assert whole[tokens] == expected[tokens] and torch.equal(whole[weights], expected[weights])
    assert whole[weights].shape[-2] == len(expected[tokens]) > 1  # every row, not the step's one
    assert whole.info["generated"] == steps[-1].info["generated"]
