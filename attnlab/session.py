"""Session: what one window shows (model, texts, run options, view, stage) and the runs that feed it.

Runs happen on one worker thread, LATEST REQUEST WINS (attnlab/jobs.py, Qt-free: every request bumps a
generation counter, at most one run is in flight and at most one waits, and a result whose generation is no
longer the latest is dropped). `traceReady` fires once per accepted trace; any error comes back as
`failed(message)` and the previous trace and state stay.

The text and stage logic it uses is plain Python (no Qt) in `attnlab.present` (texts, stages, runtime), and
what its worker runs in `attnlab.session_jobs` (a trace request, a load, a generation step), so it can be
tested and reused alone. Nothing here imports torch at module level: the window can paint before
the engine has loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from attnlab.engine.chat_prompt import Conversation
from attnlab.engine.options import RunOptions
from attnlab.engine.sampling_settings import with_model_defaults
from attnlab.jobs import Job, JobRunner
from attnlab.present.decoder_input import FOLLOWED, DecoderInput
from attnlab.present.stages import Stage, ViewState, pick_stage, slow_to_show, warm_stage
from attnlab.present.texts import example_sentence
from attnlab.session_generation import (
    GENERATE_JOB,
    GenerationRun,
    accept_model,
    accept_step,
    generate_one,
    take_followed,
    timeline_positions,
)
from attnlab.session_jobs import LoadDetour, TraceRequest, load_job, prepare_worker, reads_second_text, trace_job
from attnlab.session_patching import MAP_JOB, PATCH_A_JOB, MapRun, accept_row, accept_run_a

if TYPE_CHECKING:
    from attnlab.checkpoints.snapshots import Snapshots
    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace

DEBOUNCE_MS = 150  # typing pause before a re-trace


class Session(QObject):
    traceReady = Signal(object)  # Trace: a new accepted trace
    failed = Signal(str)  # a run could not be done; the previous trace stays
    busyChanged = Signal(bool)
    modelChanged = Signal(object)  # LiveModel: a new model is open (its first trace follows)
    modelFailed = Signal(str)  # a model could not be opened; the open one stays
    loadDetoured = Signal(object)  # LoadDetour: the file was read on the worker; the GUI takes it from here
    loadingChanged = Signal(bool)  # whether a load (open a file, build a model) is under way: it can be cancelled
    optionsChanged = Signal(object, object)  # (RunOptions, frozenset of the RunOptions field names that changed)
    viewChanged = Signal(object)  # ViewState
    stageChanged = Signal(str)  # stage key
    textsChanged = Signal()  # src/tgt changed from code (generation, reset, a new model)
    notice = Signal(str)  # a transient remark for the status bar
    layerStreamed = Signal(int, int)  # (k, n): the k-th of n layers kept away from the run's device streams in
    pinnedChanged = Signal(object)  # Trace or None: the run pinned as A for comparisons (present/compare.py)
    snapshotsChanged = Signal(object)  # Snapshots or None: the open model's weights at a few training steps
    trainingStepChanged = Signal(object)  # int or None: the snapshot step the runs use (None: the final weights)
    patchMapChanged = Signal(object)  # PatchMap: the patching map as it fills (session_patching.py)
    timelineChanged = Signal(object)  # list[int]: the decoder positions of the generation's steps (the timeline)

    _jobDone = Signal(object)  # (job, value, error) from the worker thread

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.model: LiveModel | None = None
        self.model_path: str | None = None
        self.src = ""
        self.tgt = ""
        # a conversation the runs read instead of the source box (a model with a chat template; set_chat)
        self.chat: Conversation | None = None
        # The decoder side as ids once Generate has extended it (the box shows them as text): generated
        # tokens are fed back exactly, with no text round trip. Editing the text drops them.
        self.tgt_ids: list[int] | None = None
        # who wrote the decoder input, for which sentence (present/decoder_input.py): the model's follows the source
        self.tgt_origin = DecoderInput()
        self._follow = False  # the next run replaces the decoder input with the model's translation of the source
        self.options = RunOptions()
        self.view: ViewState = ViewState()
        self.stage_key: str | None = None
        self.trace: Trace | None = None
        self.pinned: Trace | None = None  # run A of a comparison; it survives toggles, texts and same-shape models
        self.stages: list[Stage] = []
        self.snapshots: Snapshots | None = None  # the open model's, when its checkpoint has them
        self.training_step: int | None = None  # a snapshot step the runs use instead of the final weights
        self._stage_on_the_way: str | None = None  # a stage whose recomputed layers the worker computes
        # waiting jobs start loads first; a load makes the old model's traces moot
        self._jobs = JobRunner(
            self._deliver,
            ("load", "trace", GENERATE_JOB, "warm", MAP_JOB, PATCH_A_JOB),
            {"load": ("trace", GENERATE_JOB, MAP_JOB, PATCH_A_JOB)},
            prepare_worker,
        )
        self.generation: GenerationRun | None = None  # Generate's cached steps, kept for the timeline
        self.patch_run: MapRun | None = None  # the patching map being filled (session_patching.py)
        self.unpatched: Trace | None = None  # run B before a patch from A was asked for (session_patching.py)
        self._generate_presses = 0
        # the draws of Generate presses while the run samples (a torch.Generator at the seed, present/texts.py),
        # begun anew when a text or an option changes otherwise than by Generate
        self._draws: Any = None
        self._last_busy = False
        self._last_loading = False
        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self.request_trace)
        self._jobDone.connect(self._on_job_done)

    # ---- state -----------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._jobs.busy or self._debounce.isActive()

    @property
    def stage(self) -> Stage | None:
        return next((s for s in self.stages if s.key == self.stage_key), None)

    def set_model(
        self,
        model: LiveModel,
        src: str | None = None,
        tgt: str | None = None,
        path: str | None = None,
        snapshots: Snapshots | None = None,
    ) -> None:
        """Open `model` now; its options go back to the defaults (the trained placement, heads), and the runs
        use its final weights. `snapshots`: its weights at a few training steps (checkpoints.snapshots)."""
        self.model, self.model_path = model, path
        if getattr(model, "placement", None) is not None:  # layers spread over GPU, host and disk (offload.py)
            model.on_stream = self.layerStreamed.emit  # emitted on the worker, received on the GUI thread
        self.snapshots, self.training_step = snapshots, None
        previous, self.options = self.options, self._defaults()
        self.src = example_sentence(model) if src is None else src
        self.chat = None
        self.tgt = (tgt or "") if self._has_decoder_input() else ""
        self.tgt_ids = None
        self.tgt_origin, self._follow = DecoderInput().written(self.src, typed=False), False  # the loader's or a demo's
        self._generate_presses, self._draws = 0, None
        self.modelChanged.emit(model)
        self.snapshotsChanged.emit(snapshots)
        self.trainingStepChanged.emit(None)
        self.optionsChanged.emit(self.options, previous.changed_fields(self.options))
        self.textsChanged.emit()
        self.request_trace()

    def set_training_step(self, step: int | None) -> None:
        """Run with the open model's weights at training step `step` (one of `snapshots.steps`); None or the
        last step: the trained model itself. The new weights are built on the worker thread, like any run."""
        if self.snapshots is None:
            return
        if step == self.snapshots.final_step:
            step = None
        if step is not None and step not in self.snapshots.steps:
            raise ValueError(f"no snapshot at step {step}; the steps are {self.snapshots.steps}")
        if step != self.training_step:
            self.training_step = step
            self.trainingStepChanged.emit(step)
            self.request_trace()

    def set_chat(self, messages: list[dict] | None, add_generation_prompt: bool = True) -> None:
        """Run on a conversation (a list of {"role", "content"}; None: back to the source box's text), rendered
        by the model's chat template on the worker (engine/chat_prompt.py). ValueError for a bad message."""
        chat = None if messages is None else Conversation.of(messages, add_generation_prompt)
        if chat != self.chat:
            self.chat = chat
            self.textsChanged.emit()
            self.request_trace()

    def chat_messages(self) -> tuple[list[dict[str, str]], bool] | None:
        """The conversation the runs read, as plain data (messages, add-generation-prompt); None: the text box."""
        return None if self.chat is None else (self.chat.dicts(), self.chat.add_generation_prompt)

    def set_src(self, text: str, debounce: bool = True) -> None:
        """A new source sentence; a decoder input the person did not type follows it on the next run."""
        if text != self.src:
            self.src, self.chat, self._draws = text, None, None  # typing in the box leaves a conversation
            config = self.model.config if self.model is not None else None
            if config is not None and config.arch == "decoder-only":
                self.tgt_ids = None
            if self.tgt_origin.follows(config):
                self._follow, self.tgt_ids = True, None
            self._schedule(debounce)

    def set_tgt(self, text: str, debounce: bool = True, typed: bool = True) -> None:
        """A new decoder input, `typed` by the person (kept when the source changes) or not (a lesson's step,
        which follows the source like the model's own)."""
        if not self._has_decoder_input():
            return
        following, self._follow = self._follow, False
        self.tgt_origin = self.tgt_origin.written(self.src, typed)
        if text != self.tgt or following:  # a run about to replace the input with the model's: run again
            self.tgt, self._draws = text, None
            self.tgt_ids = None
            self._schedule(debounce)

    def set_options(self, options: RunOptions) -> bool:
        """Accept new options and re-trace; options that cannot run here are refused with `failed`.

        They are checked here, once: the model remembers them as runnable and the run does not check again."""
        changed = self.options.changed_fields(options)
        if not changed:
            return True
        if self.model is not None:
            problems = self.model.options_problems(options)
            if problems:
                self.failed.emit("These options cannot run on this model: " + "; ".join(problems))
                self.optionsChanged.emit(self.options, changed)  # the controls of those fields snap back
                return False
        self.options, self._draws = options, None
        self.optionsChanged.emit(options, changed)
        self.request_trace()
        return True

    def _has_decoder_input(self) -> bool:
        return reads_second_text(self.model)

    def update_options(self, **changes: Any) -> bool:
        return self.set_options(self.options.replace(**changes))

    def reset_options(self) -> None:
        """Every toggle back to its default (the device choice stays)."""
        self.set_options(self._defaults())

    def _defaults(self) -> RunOptions:
        """Every toggle at its default, the sampling ones at the model's generation_config.json (the device stays)."""
        base = RunOptions(device=self.options.device)
        return with_model_defaults(base, self.model.metadata) if self.model is not None else base

    def toggle_mask_cell(self, site: str, q: int, k: int) -> None:
        self.set_options(self.options.toggled_mask_cell(site, q, k))

    def clear_custom_masks(self) -> None:
        self.set_options(self.options.replace(custom_masks=()))

    def pin(self, trace: Trace | None = None) -> None:
        """Keep the current run (or `trace`: another model's run on this sentence, e.g. a quantized model's
        original, present/quantization.py) as A: every later run (any toggle, sentence or checkpoint) is B."""
        trace = trace if trace is not None else self.trace
        if trace is not None:
            self.pinned = trace
            self.pinnedChanged.emit(self.pinned)
            if self.view.compare == "off":
                self.set_view(compare="diff")

    def unpin(self) -> None:
        self.pinned = None
        self.pinnedChanged.emit(None)
        self.set_view(compare="off")

    def set_ablation(self, site: str, head: int, mode: str | None) -> bool:
        """Ablate head `head` at `site` ("zero", "mean") or stop ablating it (None)."""
        return self.set_options(self.options.with_ablation(site, head, mode))

    def set_view(self, **changes: Any) -> None:
        view = replace(self.view, **changes)
        if view != self.view:
            self.view = view
            self.viewChanged.emit(view)

    def set_stage(self, key: str) -> None:
        """Show stage `key`. When its panel reads layers a lean run must recompute (engine/replay.py), they
        are computed on the worker first and the stage follows (stageChanged) when they are on the host."""
        stage = next((s for s in self.stages if s.key == key), None)
        if stage is None or key == (self._stage_on_the_way or self.stage_key):
            return
        trace = self.trace
        slow = slow_to_show(trace, stage) if trace is not None else []
        if trace is not None and slow:
            self._stage_on_the_way = key

            def warm() -> str:
                warm_stage(trace, stage)
                return key

            self._submit("warm", warm)
            return
        self._stage_on_the_way = None
        self._jobs.invalidate("warm")  # a stage still being warmed is moot
        self._show_stage(key)

    def _show_stage(self, key: str) -> None:
        if key != self.stage_key and any(s.key == key for s in self.stages):
            self.stage_key = key
            self.stageChanged.emit(key)

    def step_stage(self, delta: int) -> None:
        """Move `delta` stages along the pipeline (clamped at both ends); delta ±10**9 jumps to an end."""
        if not self.stages:
            return
        keys = [s.key for s in self.stages]
        current = self._stage_on_the_way or self.stage_key
        i = keys.index(current) if current in keys else 0
        self.set_stage(keys[max(0, min(len(keys) - 1, i + delta))])

    # ---- generation --------------------------------------------------------------------------------------
    def generate_next(self) -> None:
        """Append the model's next token to the decoder input (the prompt for decoder-only models).

        Presses that arrive while a run is under way are counted and done one by one as traces arrive, so
        each press adds exactly one token."""
        if self.model is None or not self.model.config.has_decoder:
            return
        if self.busy or self.trace is None:
            self._generate_presses += 1
            return
        self._generate_one()

    def _generate_one(self) -> None:
        generate_one(self)

    def timeline(self) -> list[int]:
        """The decoder positions of the shown generation's steps ([] when the texts are not a generation's)."""
        return timeline_positions(self)

    def reset_tgt(self) -> None:
        self._generate_presses = 0
        if self.model is not None and self.model.config.arch == "decoder-only":
            return
        self.set_tgt("", debounce=False)
        self.textsChanged.emit()

    # ---- running -----------------------------------------------------------------------------------------
    def _schedule(self, debounce: bool) -> None:
        if debounce:
            self._debounce.start()
            self._set_busy()
        else:
            self.request_trace()

    @Slot()
    def request_trace(self) -> None:
        """Re-run the model on the current texts and options (latest request wins)."""
        self._debounce.stop()
        if self.model is None:
            return
        model, text = self.model, self.src
        chat = self.chat  # a conversation replaces the source box's text
        follow = self._follow and self.tgt_origin.follows(model.config)
        stale = self.tgt_origin.stale_for(text, self.tgt)
        request = TraceRequest(
            model,
            text if chat is None else chat,
            list(self.tgt_ids) if self.tgt_ids is not None else self.tgt,
            self.options,
            follow,
            (self.tgt, stale) if stale is not None and not follow else None,
            self.stage_key,
            self.snapshots,
            self.training_step,
        )
        self._submit("trace", partial(trace_job, request))

    def load_async(
        self,
        factory: Callable[[], LiveModel | LoadDetour],
        path: str | None = None,
        src: str | None = None,
        tgt: str | None = None,
        prefix: bool = False,
        remembered: tuple[str, str] | None = None,
    ) -> None:
        """Build a model with `factory()` on the worker thread, then open it (on failure: `modelFailed`).

        With `prefix`, the decoder input starts as the model's own greedy translation (minus a token).
        `remembered` = (model name, sentence) from the last session: used when no `src` is given and the
        model has that name (an English sentence is no example for a French language model)."""

        self._submit("load", partial(load_job, factory, path, src, tgt, prefix, remembered))

    @property
    def loading(self) -> bool:
        """Whether a load is running or waiting (its result not yet accepted or dropped)."""
        return self._jobs.pending("load")

    def cancel(self) -> bool:
        """Cancel (the status bar's button): stop a tokenizer running in its child process (the app's time
        limit) at once, so the run waiting on it fails with a message, and drop a load under way. False when
        there was no load to drop."""
        from attnlab.engine.tokenizer_process import stop_all

        stop_all()
        return self.cancel_load()

    def cancel_load(self) -> bool:
        """Drop the load under way: the open model stays. A file being read cannot be interrupted; its result
        is dropped when it comes (latest request wins). False when no load was under way."""
        if not self.loading:
            return False
        self._jobs.drop("load")
        self.request_trace()  # submitting the load dropped any waiting trace of the model that stays
        self._set_busy()
        return True

    def _submit(self, kind: str, run: Callable[[], Any]) -> None:
        self._jobs.submit(kind, run)
        self._set_busy()

    def _deliver(self, job: Job, value: Any, error: str | None) -> None:  # worker thread
        try:
            self._jobDone.emit((job, value, error))
        except RuntimeError:  # the session was deleted while this ran (window closed)
            pass

    @Slot(object)
    def _on_job_done(self, result: tuple[Job, Any, str | None]) -> None:
        job, value, error = result
        if self._jobs.finished(job):  # the next waiting job starts; a stale result is dropped
            if job.kind == "load":
                accept_model(self, value, error)
            elif job.kind == MAP_JOB:
                accept_row(self, value, error)
            elif job.kind == PATCH_A_JOB:
                accept_run_a(self, value, error)
            elif job.kind == GENERATE_JOB:
                accept_step(self, value, error)
            elif job.kind == "warm":
                self._stage_on_the_way = None
                if error is None:
                    self._show_stage(value)
                else:
                    self.failed.emit(error)
            else:
                self._accept_trace(value, error)
        self._set_busy()

    def _accept_trace(self, finished: tuple[Trace, list[Stage]] | None, error: str | None) -> None:
        """A finished run from the worker: its whole Trace and its stage list (built there, once)."""
        if error is not None or finished is None:
            self._generate_presses = 0
            self.failed.emit(error or "the run returned nothing")
            return
        trace, self.stages = finished
        self.trace = trace
        if trace.info.get(FOLLOWED) is not None:
            take_followed(self, *trace.info[FOLLOWED])
        stage = pick_stage(self.stages, self.stage_key)
        self.stage_key = stage.key if stage else None
        heads = trace.n_heads
        if self.view.head >= heads:
            self.set_view(head=0)
        self.traceReady.emit(trace)
        if self._generate_presses and not self.busy:
            self._generate_presses -= 1
            self._generate_one()

    def _set_busy(self) -> None:
        busy, loading = self.busy, self.loading
        if busy != self._last_busy:
            self._last_busy = busy
            self.busyChanged.emit(busy)
        if loading != self._last_loading:
            self._last_loading = loading
            self.loadingChanged.emit(loading)

    def shutdown(self) -> None:
        """Drop waiting work and let the running job finish in the background."""
        self._debounce.stop()
        self._jobs.shutdown()
