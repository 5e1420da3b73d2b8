"""The generation timeline against the whole sequence: a model's rows computed step by step with the KV cache
(engine/kv_cache.py) beside the same rows of one whole-sequence recorded run. Used by
tests/engine/test_kv_cache.py and benchmarks/generation_bench.py."""

from __future__ import annotations

import torch

from attnlab.engine import kv_cache, names
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder
from attnlab.engine.trace import Trace, finish


def whole_trace(module: Transformer, src: torch.Tensor | None, ids: torch.Tensor) -> Trace:
    """One recorded run of the whole decoder input ids [1, T] (and source [1, S])."""
    resolved = RunOptions().resolved(module.config)
    rec = Recorder(True)
    with torch.inference_mode():
        module(src, ids, options=resolved, rec=rec)
    return finish(rec, module.config, resolved, "cpu")


def timeline(module: Transformer, src: torch.Tensor | None, ids: torch.Tensor, n_prompt: int) -> list[tuple[int, dict]]:
    """The prefill of ids[:, :n_prompt], then one cached step per later id (teacher-forced): a list of (the
    step's first row, its entries cut to its rows)."""
    resolved = RunOptions().resolved(module.config)
    run = kv_cache.CachedRun(resolved)
    out = []
    with torch.inference_mode():
        rec = Recorder(True)
        logits = kv_cache.prefill(module, run, ids[:, :n_prompt], rec, src)
        trace = finish(rec, module.config, resolved, "cpu")
        out.append((0, kv_cache.step_rows(trace, n_prompt, logits.shape[1], cache=False)))
        for t in range(n_prompt, ids.shape[1]):
            rec = Recorder(True)
            kv_cache.step(module, run, int(ids[0, t]), rec)
            trace = finish(rec, module.config, resolved, "cpu")
            out.append((t, kv_cache.step_rows(trace, 1, kv_cache.BLOCK, cache=True)))
    return out


def differences(steps: list[tuple[int, dict]], whole: Trace, relative: bool = False) -> dict[str, float]:
    """name -> the largest |step row − whole row| over every step (0.0: equal to the last bit; `relative`:
    divided by the largest |whole row| value, at least 1). A
    self-attention's K and V are compared as the cache (rows 0 … t); an attention map over its first t + 1
    keys (the rest are blocked in the whole run: weight 0)."""
    worst: dict[str, float] = {}
    for first, entries in steps:
        for name, value in entries.items():
            if not isinstance(value, torch.Tensor) or value.dim() < 2 or name not in whole:
                continue
            full = whole[name]
            rows = value.shape[-2]
            if names.step_of(name) in ("k", "v") and names.site_of(name) and ".cross" not in name:
                full = full[..., :rows, :]  # the cache: rows 0 … t
            elif ".cross" in name and names.step_of(name) in ("k", "v"):
                continue  # the encoder's K and V: the same tensor every step
            else:
                full = full[..., first : first + rows, :]
            full = full[..., : value.shape[-1]]
            if full.shape != value.shape:
                raise AssertionError(f"{name}: step {tuple(value.shape)} vs whole {tuple(full.shape)}")
            blocked = torch.isinf(full) & torch.isinf(value) & (full == value)
            diff = (full.double() - value.double()).abs().masked_fill(blocked, 0.0)
            largest = float(diff.max()) if diff.numel() else 0.0
            if relative and largest:
                largest /= max(1.0, float(full[torch.isfinite(full)].abs().max()))
            worst[name] = max(worst.get(name, 0.0), largest)
    return worst
