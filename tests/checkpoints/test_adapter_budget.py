"""A LoRA adapter's ΔW counted before they are computed (issue 38): merging holds float32 copies of every adapted
weight (adapters.DELTA_COPIES), counted from the base's shapes (transformers' own model here) against the memory
there is; refused in one line, naming the adapter, with no ΔW computed."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.checkpoints import CheckpointError, adapters
from attnlab.checkpoints.loader import load_checkpoint
from attnlab.engine import output_budget
from attnlab.engine.adapter import LoraFactors
from tests.support.lora_tiny import write_adapter

pytest.importorskip("peft")

TARGETS = ["q_proj", "v_proj"]


def test_delta_weights_that_cannot_fit_are_refused_before_any_is_computed(tmp_path: Path, monkeypatch) -> None:
    _base, adapter, merged = write_adapter(tmp_path, "llama", r=4, lora_alpha=16, target_modules=TARGETS)
    adapted = sum(p.numel() for n, p in merged.named_parameters() if n.endswith(tuple(f"{t}.weight" for t in TARGETS)))
    needed = adapters.DELTA_COPIES * 4 * adapted  # float32
    computed: list[str] = []
    real_delta = LoraFactors.delta
    monkeypatch.setattr(LoraFactors, "delta", lambda self: computed.append(self.module) or real_delta(self))
    monkeypatch.setattr(output_budget, "memory_room", lambda: needed - 1)
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(adapter)
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"Cannot open the LoRA adapter {str(adapter)!r}: merging its ΔW in float32 (4 weights)")
    assert f"needs about {output_budget.amount(needed)} of memory, but only" in line and computed == []
    monkeypatch.setattr(output_budget, "memory_room", lambda: needed)  # exactly enough
    assert load_checkpoint(adapter).adapter is not None and len(computed) == 2 * len(TARGETS)
