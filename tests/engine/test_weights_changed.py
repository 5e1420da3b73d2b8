"""A change to the weights after a run is noticed however it was made (issue 38.5): a lean trace's replayed entries
raise ReplayError in one line instead of silently using the new weights, and the run cache runs the input again
instead of handing back the old run. Writes through `.data` bypass the version counters, so the model's
fingerprint (engine/weights_print.py) reads storage addresses and sampled values too."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnlab.engine.replay import ReplayError
from attnlab.engine.weights_print import weights_print
from tests.engine.test_replay import SRC, TGT, lean
from tests.support.tiny import build_tiny_model

WEIGHT = "decoder.0.self_attn.w_q.weight"


def change(module: nn.Module, how: str) -> None:
    """Change one weight of `module` the way `how` names."""
    p = dict(module.named_parameters())[WEIGHT]
    if how == "data assigned":
        p.data = p.data + 1.0  # a new tensor under the same Parameter (its counter is not bumped)
    elif how == "data copied into":
        p.data.copy_(p.data * 2.0 + 0.5)  # the same storage, through `.data` (a counter of its own)
    elif how == "one row through data":
        p.data[0] += 1.0
    elif how == "in place under no_grad":
        with torch.no_grad():
            p.mul_(3.0)
    elif how == "load_state_dict":
        state = module.state_dict()
        module.load_state_dict({**state, WEIGHT: state[WEIGHT] - 1.0})
    elif how == "parameter replaced":
        layer = module.get_submodule(WEIGHT.rsplit(".", 1)[0])
        layer.weight = nn.Parameter(p.detach() + 1.0)
    else:
        raise AssertionError(how)


HOWS = ["data assigned", "data copied into", "one row through data", "in place under no_grad", "load_state_dict"]
HOWS += ["parameter replaced"]


@pytest.mark.parametrize("how", HOWS)
def test_a_lean_trace_refuses_to_replay_on_weights_changed(how):
    model = lean(build_tiny_model())
    thin = model.trace(SRC, TGT)
    change(model.module, how)
    with pytest.raises(ReplayError, match="changed since this run") as caught:
        thin["dec.0.self.q"]
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("how", HOWS)
def test_the_same_input_after_a_weight_change_runs_again(how):
    model = build_tiny_model()
    first = model.trace(SRC, TGT)
    change(model.module, how)
    again = model.trace(SRC, TGT)
    reference = build_tiny_model()  # the same seed: the same weights, changed the same way
    change(reference.module, how)
    expected = reference.trace(SRC, TGT)["logits"]
    assert not torch.equal(again["logits"], first["logits"])
    assert torch.equal(again["logits"], expected)


def test_an_unchanged_model_keeps_its_print_and_its_replays():
    model = lean(build_tiny_model())
    thin = model.trace(SRC, TGT)
    assert weights_print(model.module) == weights_print(model.module)
    assert thin["dec.0.self.q"].shape[-1] > 0  # reads: nothing changed


def test_the_print_reads_a_few_values_per_parameter_not_every_element(monkeypatch):
    big = nn.Linear(2048, 2048)  # 4M elements
    calls = []
    real = torch.Tensor.contiguous

    def counting(self, *args, **kwargs):
        calls.append(self.numel())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "contiguous", counting)
    weights_print(big)
    monkeypatch.undo()
    assert calls and max(calls) <= 64  # the values copied per parameter
