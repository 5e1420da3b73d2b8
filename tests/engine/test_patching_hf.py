"""Activation patching (issue 37): a run B patched with run A's value of one entry equals the same patch written
with plain torch forward hooks on transformers' own model, to 1e-4 in float32, for GPT-2, Llama (grouped-query
attention), BERT and Marian (cross-attention included). Tiny random models built here (tests/support/hf_tiny.py)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from attnlab.checkpoints.hf import convert
from attnlab.engine.model import Transformer
from attnlab.engine.options import DEFAULT_OPTIONS, RunOptions
from attnlab.engine.patch_sweep import patch_from
from attnlab.engine.trace import Recorder
from tests.support import hf_patch
from tests.support.hf_tiny import CASES, DEC_IDS, IDS
from tests.support.recorded import finished

TOL = 1e-4
IDS_B = [9, 17, 64, 88, 3, 7, 21, 61]  # run B: the same length as IDS (run A), other tokens

# (model, our step, hf step, layer, head, position, site): a head's Q/K/V/context row, a whole head, a position's
# residual row, an FFN output, a site's output; cross-attention for Marian
PATCHES = [
    ("gpt2", "q", 1, 2, 5, "self"),
    ("gpt2", "k", 0, 1, None, "self"),
    ("gpt2", "v", 1, 3, 2, "self"),
    ("gpt2", "context", 0, 2, 6, "self"),
    ("gpt2", "context", 1, 0, None, "self"),
    ("gpt2", "layer", 0, None, 4, "self"),
    ("gpt2", "ffn", 1, None, 7, "self"),
    ("gpt2", "out", 0, None, None, "self"),
    ("llama", "q", 0, 3, 6, "self"),
    ("llama", "k", 1, 1, 2, "self"),  # a shared K/V head (2 K/V heads for 4 Q heads)
    ("llama", "v", 0, 0, None, "self"),
    ("llama", "context", 1, 1, 7, "self"),
    ("llama", "layer", 0, None, 3, "self"),
    ("llama", "ffn", 0, None, 7, "self"),
    ("bert", "q", 0, 1, 2, "self"),
    ("bert", "k", 1, 3, None, "self"),
    ("bert", "context", 0, 2, 4, "self"),
    ("bert", "layer", 0, None, 5, "self"),
    ("bert", "ffn", 1, None, 1, "self"),
    ("marian", "q", 1, 1, 2, "cross"),
    ("marian", "k", 0, 2, 3, "cross"),
    ("marian", "v", 1, 0, None, "cross"),
    ("marian", "context", 0, 3, 4, "cross"),
    ("marian", "out", 1, None, 1, "cross"),
    ("marian", "context", 1, 2, None, "self"),
    ("marian", "layer", 0, None, 2, "self"),
]


def entry_name(config, step: str, layer: int, site: str) -> str:
    stack = "dec" if config.has_decoder else "enc"
    if step == "layer":
        return f"{stack}.{layer}.out"
    if step == "ffn":
        return f"{stack}.{layer}.ffn.out"
    return f"{stack}.{layer}.{site}.{step}"


@pytest.fixture(scope="module")
def built():
    made = {}
    for name in ("gpt2", "llama", "bert", "marian"):
        model, hf_config = CASES[name].build()
        config, state, _notes = convert(hf_config, model.state_dict())
        module = Transformer(config)
        module.load_state_dict(state)
        made[name] = (model.float().eval(), config, module.eval())
    return made


def ours(module, config, ids, options=DEFAULT_OPTIONS):
    """(logits [T, V], trace) of our engine on `ids` (the source of an encoder-decoder, DEC_IDS decoding)."""
    rec = Recorder(True)
    src = torch.tensor([ids]) if config.has_encoder else None
    tgt = (torch.tensor([DEC_IDS]) if config.has_encoder else torch.tensor([ids])) if config.has_decoder else None
    with torch.inference_mode():
        logits = module(src, tgt, options=options, rec=rec)
    return logits[0], finished(rec, config, options)


def theirs(model, name, ids):
    def run():
        if name == "marian":
            return model(input_ids=torch.tensor([ids]), decoder_input_ids=torch.tensor([DEC_IDS]))
        return model(input_ids=torch.tensor([ids]))

    return run


@pytest.mark.parametrize(("name", "step", "layer", "head", "position", "site"), PATCHES)
def test_a_patched_run_equals_the_same_patch_written_with_torch_hooks(built, name, step, layer, head, position, site):
    model, config, module = built[name]
    _logits_a, trace_a = ours(module, config, IDS)
    clean_b, _trace_b = ours(module, config, IDS_B)
    entry = entry_name(config, step, layer, site)
    patch = patch_from(trace_a, entry, head, position)
    patched, trace = ours(module, config, IDS_B, RunOptions(patch=(patch,)))
    point = hf_patch.points(name, model, layer, site)[step]
    reference = hf_patch.patched_logits(
        model, point, step, head, position, config.d_head, theirs(model, name, IDS), theirs(model, name, IDS_B)
    )
    err = float((patched - reference).abs().max())
    assert err <= TOL, f"{name} {entry} head {head} position {position}: differs by {err:.2e}"
    assert not torch.equal(patched, clean_b)  # the patch changed something
    index = patch.index()
    assert torch.equal(trace[entry][index], trace_a[entry][index])  # the trace holds the patched value


def test_no_patch_is_bit_identical(built):
    _model, config, module = built["gpt2"]
    plain, _ = ours(module, config, IDS_B)
    again, _ = ours(module, config, IDS_B, RunOptions(patch=()))
    assert torch.equal(plain, again)
