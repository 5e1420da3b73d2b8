"""What the Session's worker runs, Qt-free: a trace request, a model load, one generation step.

Each job is a plain function of values the Session copied on the GUI thread when it was asked for (so that
later edits of the Session's state cannot reach a job under way); attnlab/jobs.py runs them, latest request
wins, and session.py turns their results into signals.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.engine.chat_prompt import Conversation
from attnlab.engine.options import RunOptions
from attnlab.present.ablation import BASELINE_PROBS, baseline_probs
from attnlab.present.decoder_input import FOLLOWED, WRITTEN_FOR
from attnlab.present.stages import Stage, warm_up
from attnlab.present.texts import default_prefix, example_sentence, extended_ids, ids_text, next_token, real_length

if TYPE_CHECKING:
    from attnlab.checkpoints.snapshots import Snapshots
    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace

    # what a load job hands the GUI: (model, source text, decoder input, path, model_snapshots(model))
    Loaded = tuple[LiveModel, str, str, str | None, tuple[Snapshots | None, str]]

TOKENIZE_TIMEOUT_S = 10.0  # a session stops a Hugging Face tokenizer that takes longer on one text (issue 27)


def prepare_worker() -> None:
    """The session's worker thread, before its first job: torch's threads, and the tokenizer's time limit (its
    encodes run in a child process stopped after TOKENIZE_TIMEOUT_S, so a window built any way, by the app, a
    test or the Python API, never freezes on a hostile tokenizer: engine/tokenizer_process.py)."""
    from attnlab.engine.tokenizer_process import limit_this_thread
    from attnlab.present.runtime import configure_torch

    configure_torch()
    limit_this_thread(TOKENIZE_TIMEOUT_S)


@dataclass(frozen=True)
class LoadDetour:
    """What a load job returns instead of a model when the GUI must act before (or instead of) opening one:
    `kind` "settings": a bare state dict whose settings the user is asked for (`value`: the cheap probe);
    "additive": an additive-attention model for its own window (`value`: the loaded model). The file was
    read on the worker either way."""

    kind: str
    value: Any
    path: str | None = None


@dataclass(frozen=True)
class TraceRequest:
    """What a trace job runs on, copied from the Session when it was asked for."""

    model: LiveModel
    text: str | Conversation  # the source box, or a conversation (Session.set_chat)
    decoder_input: str | list[int]  # the decoder input as typed, or the ids generation extended it to
    options: RunOptions
    follow: bool  # replace the decoder input with the model's own translation of `text`
    written_for: tuple[str, str] | None  # (decoder input, the source it was written for) when that differs
    stage_key: str | None  # the stage shown: its entries are brought to the host on the worker
    snapshots: Snapshots | None = None
    step: int | None = None  # a training snapshot step the run uses instead of the final weights


def reads_second_text(model: LiveModel | None) -> bool:
    """Whether `model` reads a second text besides the source (True before a model is open): an
    encoder-decoder's decoder input, or sentence B of a model that reads sentence pairs (a decoder-only
    model's prompt is the source box, see LiveModel.prompt_sides)."""
    if model is None:
        return True
    config = model.config
    return (config.has_encoder and config.has_decoder) or bool(getattr(model, "reads_pairs", False))


def model_snapshots(model: LiveModel) -> tuple[Snapshots | None, str]:
    """(the training snapshots beside `model`'s checkpoint or None, why they could not be read or '')."""
    from attnlab.checkpoints.snapshots import find_snapshots

    return find_snapshots(model) if hasattr(model, "metadata") else (None, "")


def trace_job(request: TraceRequest) -> tuple[Trace, list[Stage]]:
    """Run the request: its Trace, with what the Session needs added (Trace.with_info: FOLLOWED, WRITTEN_FOR,
    the training step, the un-ablated baseline, the job's time), and its stage list (built here, once)."""
    start = time.perf_counter()
    model, step, snapshots = request.model, request.step, request.snapshots
    # a snapshot: built once, here (a step is only set while the model has snapshots)
    weights = snapshots.model_at(step) if step is not None and snapshots is not None else model
    text = request.text if isinstance(request.text, str) else None  # a conversation is never followed
    followed = default_prefix(weights, text) if request.follow and text is not None else None  # its own translation
    src, tgt = model.prompt_sides(request.text, request.decoder_input if followed is None else followed)
    before = baseline_probs(weights, src, tgt, request.options)  # [T, V] or None: the run without ablations
    run = weights.trace(src, tgt, request.options)
    stages = warm_up(run, request.stage_key)  # the stage list, and the shown panel's entries on the host
    added: dict[str, Any] = {
        FOLLOWED: None if followed is None else (request.text, followed),
        WRITTEN_FOR: request.written_for,
    }
    if step is not None:
        added["training_step"] = step
    if before is not None:
        added[BASELINE_PROBS] = before
    # a new Trace sharing the run's entries and host copies (the one the model keeps stays as it was made)
    return run.with_info(**added, job_ms=(time.perf_counter() - start) * 1000.0), stages


def load_job(
    factory: Callable[[], LiveModel | LoadDetour],
    path: str | None,
    src: str | None,
    tgt: str | None,
    prefix: bool,
    remembered: tuple[str, str] | None,
) -> Loaded | LoadDetour:
    """Build a model with `factory()` and the texts it opens with (see Session.load_async)."""
    model = factory()
    if isinstance(model, LoadDetour):
        return model
    text = src
    if text is None and remembered and remembered[0] == model.name:
        text = remembered[1]
    text = example_sentence(model) if text is None else text
    start = tgt if tgt is not None else (default_prefix(model, text) if prefix else "")
    return model, text, start, path, model_snapshots(model)


@dataclass(frozen=True)
class Extended:
    """The decoder input one generation step made: its ids, their text, and the token appended."""

    ids: list[int]
    text: str
    piece: str


def extend_by_one(model: LiveModel, trace: Trace, draws: Any = None) -> Extended | str:
    """The decoder input of `trace` with the model's next token appended (the most probable, or drawn with the
    generator `draws` when the run samples), or why none is (the model predicts </s>, or the input is as long
    as the model reads)."""
    token_id, piece = next_token(model, trace, draws)
    tok = model.tokenizer("tgt")
    if token_id == tok.specials.eos:
        return "The model predicts </s>: it considers the sentence finished."
    if real_length(trace[names.side_entry("tgt", "tokens")]) + 1 >= model.config.max_len:
        return f"The decoder input has reached this model's limit of {model.config.max_len} tokens."
    ids = extended_ids(trace, token_id, tok.specials.n_added("decoder"))
    return Extended(ids, ids_text(tok, ids), piece)
