"""Derived rules that run model code are registered from above the model (engine/derived.py `register`)."""

from __future__ import annotations

import pytest
import torch

from attnlab.engine import derived
from attnlab.engine.derived import Derived, compute, register


def test_the_modules_above_the_model_register_their_rules():
    """The logit lens and a lean run's replay register the rules their entries name; the Trace reads them
    through derived.RULES like any other."""
    from attnlab.engine import logit_lens, replay

    assert derived.RULES["lens_ids"] is logit_lens.lens_ids
    assert derived.RULES["lens_probs"] is logit_lens.lens_probs
    assert derived.RULES[replay.RULE] is replay.replayed


def test_a_rule_name_has_one_meaning():
    """Registering another function under a known rule is refused; the same function again is harmless."""
    with pytest.raises(ValueError, match="'add' is already registered"):
        register("add", lambda a, b: a - b)
    register("add", derived.RULES["add"])
    a, b = torch.ones(2), torch.full((2,), 2.0)
    assert torch.equal(compute(Derived("add", ("a", "b")), [a, b]), a + b)


def test_an_unregistered_rule_says_so():
    with pytest.raises(KeyError, match="'nowhere' is not registered"):
        compute(Derived("nowhere", ()), [])
