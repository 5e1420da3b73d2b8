"""Greedy generation as a timeline: LiveModel.generate's loop. The prompt runs once (step 0, the prefill,
holds every prompt row); each later step runs only the new token's position through the decoder, attending
to the KV cache (engine/kv_cache.py), and its Trace holds the rows computed at that step: an attention map of
[H, 1, t + 1], the cache's K and V [H_kv, t + 1, dk], one row of every hidden state and of the logits.

A run the cache cannot serve (see `why_not_cached`) re-traces the whole sequence at each step instead, as
generation did before the cache.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from typing import Any

import torch

from attnlab.engine import kv_cache, names, sampling
from attnlab.engine import live_placement as placing
from attnlab.engine.devices import pick_device
from attnlab.engine.live_inputs import Prompt
from attnlab.engine.live_reuse import output_probs
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder
from attnlab.engine.sampling_settings import GENERATION_KEY
from attnlab.engine.trace import Trace
from attnlab.engine.typed import UNSURE_BELOW, unsure_notice

# engine/live.LiveModel, whose generate() calls this module: named here only as what these functions are handed
LiveModel = Any

# the options a cached step runs as the whole sequence would: the rest change what a row sees (masks, heads, ...);
# the sampling settings choose among the logits after the run, the adapter's strength is set on the weights
_STEP_FREE = ("temperature", "device", "record", "precision", "sample", "top_k", "top_p", "seed", "adapter_strength")


def why_not_cached(model: LiveModel, options: RunOptions) -> str | None:
    """Why generation re-traces the whole sequence at each step for this model and these options (None: it
    uses the KV cache)."""
    cfg = model.config
    if model.placement is not None:
        return "the model's layers are spread over devices"
    if cfg.position_bias != "none":
        return "a position bias (ALiBi, T5) is built for the whole sequence"
    changed = [f for f in RunOptions.__dataclass_fields__ if getattr(options, f) != getattr(RunOptions(), f)]
    changed = [f for f in changed if f not in _STEP_FREE]
    return f"the run changes {', '.join(changed)}" if changed else None


def chooser(model: LiveModel, options: RunOptions) -> Callable[[Trace], tuple[int, float]]:
    """The generation's next-token rule (engine/sampling.step_chooser: the argmax, or a draw from one seeded
    stream when `options.sample`): a step's Trace -> (the token, its probability at the run's temperature)."""
    choose = sampling.step_chooser(options, model.next_token, model.output_tokenizer.id_to_token)

    def chosen(run: Trace) -> tuple[int, float]:
        token, _piece = choose(run)
        return token, float(run.read(names.PROBS, -1)[token])  # [V] of the last row: one value crosses

    return chosen


def cached_steps(
    model: LiveModel, src: Prompt, ids: list[int], options: RunOptions
) -> Generator[tuple[Trace, int], int | None, None]:
    """The prefill and then one step per token sent back: yields (the step's Trace, its position t) and
    receives the token to run next (None stops)."""
    module, cfg = model.module, model.config
    device = pick_device(options.device)
    if model.adapter is not None:  # W + s·ΔW for this run's strength, as LiveModel.trace sets it
        model.adapter.set_strength(module, options.adapter_strength)
    notices: list[str] = list(model.metadata.get("run_notices", []))
    sides = model._inputs(src, list(ids), options, notices, {})
    model._place(device, options, sides)
    resolved = options.resolved(cfg, dtype=placing.dtype_name(module))
    run = kv_cache.CachedRun(resolved)
    src_ids = torch.tensor([sides["src"][1]], device=device) if "src" in sides else None  # [1, S]
    prompt = torch.tensor([sides["tgt"][1]], device=device)  # [1, T0]
    with torch.inference_mode():  # not across the yields: the caller's code runs between them
        rec = Recorder(options.record)
        for side, (pieces, side_ids, _n) in sides.items():
            rec.tokens(names.side_entry(side, "tokens"), pieces)
            rec(names.side_entry(side, "ids"), torch.tensor([side_ids], device=device))  # [1, S] or [1, T0]
        logits = kv_cache.prefill(module, run, prompt, rec, src_ids)  # [1, T0, V]
        whole = _trace(model, rec, logits, resolved, str(device), notices, {"step": 0})
        trace = _rows_of(whole, options, run.length, logits.shape[1], {"rows": (0, run.length)})
    pieces, sequence = list(sides["tgt"][0]), list(sides["tgt"][1])  # the decoder's tokens so far
    token = yield trace, 0
    while token is not None:
        t = run.length
        with torch.inference_mode():
            rec = Recorder(options.record)
            if "src" in sides:  # the sentence the cross-attention reads
                rec.tokens(names.side_entry("src", "tokens"), sides["src"][0])
            pieces.append(model.tokenizer("tgt").id_to_token(token))
            sequence.append(token)
            rec.tokens(names.side_entry("tgt", "tokens"), pieces)  # the keys' tokens; the row is the last
            rec(names.side_entry("tgt", "ids"), torch.tensor([sequence], device=device))  # [1, t + 1]
            logits = kv_cache.step(module, run, token, rec)  # [1, BLOCK or 1, V]
            whole = _trace(model, rec, logits, resolved, str(device), [], {"step": t - prompt.shape[1] + 1})
            trace = _rows_of(whole, options, 1, logits.shape[1], {"rows": (t, t + 1), "cache_length": t + 1})
        token = yield trace, t


def _trace(
    model: LiveModel,
    rec: Recorder,
    logits: torch.Tensor,
    resolved: Any,
    device: str,
    notices: list[str],
    info: dict[str, Any],
) -> Trace:
    entries = rec.entries()
    if not rec.enabled:  # the fast path still returns what the output panel needs
        entries[names.LOGITS] = logits[0]  # [T, V]
    entries[names.PROBS] = output_probs(resolved.temperature)  # [T, V], softmax on read
    info = {"model": model.name, GENERATION_KEY: model.metadata.get(GENERATION_KEY, {}), **info}
    return Trace(entries, config=model.config, options=resolved, device=device, notices=notices, info=info)


def _rows_of(whole: Trace, options: RunOptions, rows: int, computed: int, info: dict[str, Any]) -> Trace:
    """A step's Trace of the `computed` rows cut to its own `rows` (kv_cache.step_rows; a step's K and V are
    the whole cache, the prefill's its prompt's rows); probs stay derived."""
    cache = "cache_length" in info
    if options.record:
        entries = kv_cache.step_rows(whole, rows, computed, cache)
    else:
        entries = OrderedDict([(names.LOGITS, whole[names.LOGITS][:rows])])
    entries[names.PROBS] = output_probs(options.temperature)
    return Trace(
        entries,
        config=whole.config,
        options=whole.options,
        device=whole.device,
        notices=whole.notices,
        info={**whole.info, **info},
    )


def generate(model: LiveModel, src: Prompt, prefix: str, max_new_tokens: int, options: RunOptions) -> Iterator[Trace]:
    """LiveModel.generate's loop (see there); the next token is chosen in one place, `chooser`."""
    src, ids = model.inputs.generation_prompt(src, prefix)
    tok = model.tokenizer("tgt")
    unsure: list[tuple[str, float]] = []  # the chosen tokens whose probability was below UNSURE_BELOW
    why = why_not_cached(model, options)
    steps = None if why else cached_steps(model, src, ids, options)
    choose = chooser(model, options)
    for step in range(max_new_tokens):
        if steps is None:
            run = model.trace(src=src, tgt=list(ids), options=options)
        else:
            run, _t = next(steps) if step == 0 else steps.send(ids[-1])
        next_id, prob = choose(run)
        piece = model.output_tokenizer.id_to_token(next_id)
        if prob < UNSURE_BELOW:
            unsure.append((piece, prob))
        done = next_id == tok.specials.eos or len(ids) + 2 >= model.config.max_len
        if not done:
            ids.append(next_id)
        chosen = {"next_token": piece, "next_id": next_id, "next_prob": prob, "unsure": list(unsure)}
        trace = run.with_info(**chosen, generated=tok.decode(ids), ids=list(ids), finished=done, cached=why is None)
        if why is not None:
            trace = trace.with_info(uncached=why)
        if unsure and (done or step == max_new_tokens - 1):
            trace = trace.with_notices(unsure_notice(unsure))
        yield trace
        if done:
            return


# what a step adds to its run's info (generate): kept on the whole-sequence trace of the same step
_CHOSEN = ("next_token", "next_id", "next_prob", "unsure", "generated", "ids", "finished")


def whole_trace(model: LiveModel, src: Prompt, prefix: str, last: Trace, options: RunOptions) -> Trace:
    """The whole-sequence trace of a generation's step `last` (what `attnlab trace --generate` saves): the
    step's decoder input traced at once, every row, with what the step chose; an uncached step is one already.
    The step's input is the sequence so far without the token it chose (with it, when it stopped there)."""
    if not last.info.get("cached"):
        return last
    src, _prompt = model.inputs.generation_prompt(src, prefix)
    ids = list(last.info["ids"])
    if not last.info["finished"]:  # the chosen token was appended to `ids`: the step ran the ones before it
        ids = ids[:-1]
    run = model.trace(src=src, tgt=ids, options=options)
    run = run.with_info(**{key: last.info[key] for key in _CHOSEN})
    unsure = last.info["unsure"]
    return run.with_notices(unsure_notice(unsure)) if unsure else run
