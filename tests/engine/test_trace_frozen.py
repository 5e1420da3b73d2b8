"""A Trace is what one run made, whole and frozen: writing to it raises, and what is learnt after the run
(generation's next token, the session's job time) makes a new Trace sharing the entries (Trace.with_info)."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import pytest

from attnlab.engine.options import RunOptions
from tests.support.tiny import build_tiny_model

SRC, TGT = "the black cat sees the small dog", "le chat noir"


@pytest.fixture(scope="module")
def model():
    return build_tiny_model()


def test_writing_to_a_trace_raises(model):
    trace = model.trace(SRC, TGT)
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.device = "cuda:0"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.info = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        trace.info["generated"] = "le chat"  # type: ignore[index]
    with pytest.raises(AttributeError):
        trace.notices.append("a remark")  # type: ignore[attr-defined]
    assert "generated" not in trace.info and "a remark" not in trace.notices


def test_information_added_later_makes_a_new_trace_sharing_the_entries(model):
    trace = model.trace(SRC, TGT)
    later = trace.with_info(next_token="chat").with_notices("Unsure: chat (0.20)")
    assert later is not trace and later.info["next_token"] == "chat" and later.notices[-1].startswith("Unsure")
    assert "next_token" not in trace.info and not any(n.startswith("Unsure") for n in trace.notices)
    assert later.info["compute_ms"] == trace.info["compute_ms"]  # the run's own information stays
    assert later.entries is trace.entries  # shared, not copied
    name = "enc.0.self.weights"
    assert not trace.on_host(name)
    later[name]  # a read of the copy lands in the host cache both share
    assert trace.on_host(name)


def test_a_copy_keeps_the_trace_it_was_made_from_and_moves_with_it(model):
    """Whoever tracks the run's trace (LiveModel, to move it off the GPU) reaches the copies made from it."""
    trace = model.trace("the small dog", TGT, RunOptions(temperature=1.5))
    later = trace.with_info(job_ms=1.0)
    origin = weakref.ref(trace)
    del trace
    gc.collect()
    assert origin() is not None  # held by its copy
    origin().move_to_host()  # type: ignore[union-attr]
    assert later.entries is origin().entries  # type: ignore[union-attr]  # the copy reads what was moved


def test_generation_adds_to_new_traces_and_leaves_the_models_run_as_it_was(model):
    steps = list(model.generate(SRC, max_new_tokens=3))
    assert [s.info["generated"] for s in steps] and all("next_token" in s.info for s in steps)
    kept = steps[-1]  # back to the step's own run (with the KV cache, generation keeps no run in model.reuse)
    while kept._origin is not None:
        kept = kept._origin
    assert kept is not steps[-1] and "generated" not in kept.info and kept.entries is steps[-1].entries
