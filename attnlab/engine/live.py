"""LiveModel: a Transformer with its tokenizers, run on text. What `attnlab.load()` returns.

`trace()` turns text into a Trace; `generate()` decodes greedily and yields one Trace per new token.

LiveModel is the façade over three seams, each in its own module: input preparation (text -> each side's
ids, engine/live_inputs.py), run reuse (the last runs, resuming at a layer, engine/live_reuse.py) and
placement (device, precision, what a run stores, engine/live_placement.py). What stays here is the run itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from functools import partial
from typing import Any

import torch

from attnlab.engine import generation, names, replay
from attnlab.engine import live_placement as placing
from attnlab.engine.adapter import AdapterWeights
from attnlab.engine.chat_prompt import chat_info
from attnlab.engine.config import ModelConfig
from attnlab.engine.devices import out_of_device_memory, pick_device, release_device_memory
from attnlab.engine.gpu_failures import GpuFailures
from attnlab.engine.live_inputs import InputError, InputReader, Prompt, Side, side_lengths
from attnlab.engine.live_placement import LEAN_ABOVE_BYTES
from attnlab.engine.live_reuse import RunCache, output_probs, run_key, tempered_softmax
from attnlab.engine.logit_lens import lens_entries
from attnlab.engine.model import Transformer
from attnlab.engine.offload import Placement
from attnlab.engine.options import RunOptions
from attnlab.engine.precision import module_dtype, run_dtype
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_inputs import LayerInputs, Resume
from attnlab.engine.sampling import GENERATION_KEY
from attnlab.engine.tokenizer import Tokenizer
from attnlab.engine.trace import Trace

# what callers import from here: the model, its input types and errors, and the device helpers it runs with
__all__ = ["InputError", "LiveModel", "Prompt", "out_of_device_memory", "pick_device", "tempered_softmax"]


class LiveModel:
    """A Transformer plus the tokenizers that turn text into its input ids."""

    def __init__(
        self,
        module: Transformer,
        src_tokenizer: Tokenizer | None,
        tgt_tokenizer: Tokenizer | None,
        name: str = "model",
        metadata: dict | None = None,
    ):
        self.module = module.eval()
        self.name = name
        self.inputs = InputReader(module.config, src_tokenizer, tgt_tokenizer, dict(metadata or {}))
        self.reuse = RunCache()  # the last runs, what of them a new run reuses (engine/live_reuse.py)
        self._checked: RunOptions | None = None  # the last options found runnable on this model
        self.held_dtype = module_dtype(module)  # the dtype the weights are held in (issue 23: as stored)
        self.placement: Placement | None = None  # layers spread over GPU, host and disk (checkpoints/placement.py)
        # called (k, n) on the worker as the k-th of the n layers that live away from the run's device streams in
        self.on_stream: Callable[[int, int], None] | None = None
        # a recorded run whose whole trace would exceed this many bytes keeps each layer's output only and
        # recomputes the rest of a layer when it is read (engine/replay.py)
        self.lean_above = LEAN_ABOVE_BYTES
        self._gpu_failures = GpuFailures()  # the sizes the GPU ran out of memory at (engine/gpu_failures.py)
        self._lengths = (0, 0)  # (S, T) of the run under way
        self._module_lock = threading.RLock()  # a spread-out model runs one forward (or layer replay) at a time
        self.adapter: AdapterWeights | None = None  # a LoRA adapter on the weights (engine/adapter.py)

    # ---- what it is ----------------------------------------------------------------------------------
    @property
    def config(self) -> ModelConfig:
        return self.module.config

    @property
    def src_tokenizer(self) -> Tokenizer | None:
        return self.inputs.src_tokenizer

    @property
    def tgt_tokenizer(self) -> Tokenizer | None:
        return self.inputs.tgt_tokenizer

    @property
    def metadata(self) -> dict[str, Any]:
        """What the loader knows about the model (its notices, a classroom model's languages, ...)."""
        return self.inputs.metadata

    @property
    def device(self) -> torch.device:
        return placing.module_device(self.module, self.placement)

    def spread(self, placement: Placement) -> None:
        """Say that this model's layers were placed by `placement` (engine/offload.py): runs compute on its
        device, and each layer that streams in from elsewhere calls `on_stream` (the app's progress bar)."""
        self.placement = placement
        placing.hook_streaming(self.module, placement, self._streaming)

    def _streaming(self, k: int, n: int) -> None:
        if self.on_stream is not None:
            self.on_stream(k, n)

    # ---- what a run reads (engine/live_inputs.py) ----------------------------------------------------
    def prompt_sides(self, src: Prompt, tgt: Prompt) -> tuple[Prompt, Prompt]:
        """The (encoder input, decoder input) this architecture reads from a (source, target) pair."""
        return self.inputs.prompt_sides(src, tgt)

    @property
    def chat_template(self) -> str | None:
        """The chat template the model's folder or file ships (None: it reads text only)."""
        return self.inputs.chat_template

    def role(self, side: str) -> str:
        """What a side's token sequence is to the model: "encoder", "encoder-only" or "decoder"."""
        return self.inputs.role(side)

    def tokenizer(self, side: str) -> Tokenizer:
        """The tokenizer of "src" or "tgt" (a model built without one cannot read that side's text)."""
        return self.inputs.tokenizer(side)

    def typed_form(self, text: str, side: str) -> str:
        """What the model reads of `text` typed on `side` (a classroom model: the corpus form)."""
        return self.inputs.typed_form(text, side)

    @property
    def output_tokenizer(self) -> Tokenizer:
        """The tokenizer whose ids the output distribution ranges over."""
        return self.tokenizer("tgt" if self.config.has_decoder else "src")

    @property
    def reads_pairs(self) -> bool:
        """Whether this model reads a sentence pair (BERT, RoBERTa)."""
        return self.inputs.reads_pairs

    def sentence_pair(self, text: Any) -> tuple[str, str] | None:
        """(A, B) when `text` is a sentence pair this model reads; None for one sentence."""
        return self.inputs.sentence_pair(text)

    def wrapping(self, side: str, text: Prompt = None) -> dict[str, list[str]]:
        """The special tokens this model's tokenizer puts around `side`'s text, as strings."""
        return self.inputs.wrapping(side, text)

    def _inputs(
        self, src: Prompt, tgt: Prompt, options: RunOptions, notices: list[str], types: dict | None = None
    ) -> dict[str, Side]:
        return self.inputs.sides(src, tgt, options, notices, types)

    # ---- which options run ---------------------------------------------------------------------------
    def options_problems(self, options: RunOptions) -> list[str]:
        """Why `options` cannot run on this model (empty: they can). Options found runnable are remembered,
        so the run that follows does not check them again (see `checked_options`)."""
        problems = options.problems(self.config)
        if not problems:
            self._checked = options
        return problems

    def checked_options(self, options: RunOptions) -> RunOptions:
        """`options`, validated against this model unless they are the ones checked last (OptionsError if
        they cannot run)."""
        if options is not self._checked:
            options.validate(self.config)
            self._checked = options
        return options

    # ---- where a run computes (engine/live_placement.py) ---------------------------------------------
    def _run_dtype(self, options: RunOptions) -> torch.dtype:
        return run_dtype(self.held_dtype, options.precision)

    def _weights_to_place(self, device: torch.device, dtype: torch.dtype) -> int:
        return placing.weights_to_place(self.module, self.device, device, dtype)

    def _keep(self, device: torch.device, options: RunOptions, sides: dict[str, Side]) -> replay.Keep:
        dtype = self._run_dtype(options)
        weights = partial(self._weights_to_place, device, dtype)  # asked for only when a lean CPU run is weighed
        return placing.choose_keep(self.config, options, sides, device, dtype, weights, self.lean_above)

    def _recorder(
        self,
        device: torch.device,
        options: RunOptions,
        sides: dict[str, Side],
        notices: list[str],
        keep: replay.Keep = replay.WHOLE,
    ) -> Recorder:
        element = self.module.sinusoid.element_size()
        return placing.choose_recorder(self.config, options, sides, device, element, notices, keep)

    def _place(
        self, device: torch.device, options: RunOptions, sides: dict[str, Side], keep: replay.Keep = replay.WHOLE
    ) -> None:
        placing.place(self.module, self.placement, self.held_dtype, device, options, sides, keep)

    def _fits_beside(self, device: torch.device, src: Prompt, tgt: Prompt, options: RunOptions) -> bool:
        sides = self._inputs(src, tgt, options, [], {})
        keep, dtype = self._keep(device, options, sides), self._run_dtype(options)
        weights = self._weights_to_place(device, dtype)
        return placing.fits_beside(self.config, options, sides, device, weights, dtype, keep)

    # ---- runs ----------------------------------------------------------------------------------------
    def trace(self, src: Prompt = None, tgt: Prompt = None, options: RunOptions | None = None) -> Trace:
        """Run once and record every step.

        encoder-decoder: `src` is the sentence to encode, `tgt` the decoder input (teacher forcing; <s> is
        prepended). decoder-only: `tgt` (or `src` when `tgt` is empty) is the prompt. encoder-only: `src`, or a
        sentence pair `("A", "B")` / "A [SEP] B" for a model whose tokenizer reads pairs (`sentence_pair`).
        `tgt` may also be a list of token ids. See `prompt_sides`. A model with a chat template also reads a
        conversation: a list of {"role", "content"} messages (rendered with the generation prompt) or a
        `Conversation` (engine/chat_prompt.py), fed as `apply_chat_template(..., tokenize=True)` ids.

        A run that differs from the last recorded run (or, for a fast run, the last fast one) only in its
        temperature reuses that run's entries (the output softmax is derived from the logits on read):
        nothing is recomputed. One that differs only in masks re-runs from the first layer whose mask changed
        (engine/runcache.py).
        """
        options = self.checked_options(options or RunOptions())
        src, tgt = self.prompt_sides(src, tgt)
        if self.adapter is not None:  # W + s·ΔW for this run's strength (a no-op when it is the last one's)
            self.adapter.set_strength(self.module, options.adapter_strength)
        key = run_key(self.module, src, tgt, options, self.adapter)
        warmer = self.reuse.reused(key, options, self.config)
        if warmer is not None:
            return warmer
        device = pick_device(options.device)
        resume = self.reuse.prepare(key, options.record, device, self.config)
        if device.type == "cuda" and self.reuse.displaced and not self._fits_beside(device, src, tgt, options):
            self.reuse.free_displaced()  # one trace at a time on the GPU when two do not fit (issue 23)
        inputs = LayerInputs() if options.record else None
        trace: Trace | None = None
        try:
            trace = self._trace_on(device, src, tgt, options, resume, inputs)
        except RuntimeError as error:  # torch.cuda.OutOfMemoryError is one
            if device.type == "cpu" or not out_of_device_memory(error):
                raise
        if trace is None:  # out of GPU memory; outside the handler, whose traceback held the run's tensors
            release_device_memory()
            inputs = None  # the previous run's inputs live on the GPU; a CPU run starts afresh
            fallback = self._gpu_failures.failed(options, self._lengths)
            trace = self._trace_on(torch.device("cpu"), src, tgt, options, after=[fallback])
        # the key again: moving the weights to another device gives them new version counters
        key = run_key(self.module, src, tgt, options, self.adapter)
        self.reuse.store(key, trace, options.record, resume, inputs)
        return trace

    @torch.inference_mode()
    def _trace_on(
        self,
        device: torch.device,
        src: Prompt,
        tgt: Prompt,
        options: RunOptions,
        resume: Resume | None = None,
        inputs: LayerInputs | None = None,
        after: list[str] | None = None,
    ) -> Trace:
        """One run on `device`, whole: its entries, config, resolved options, device and notices (`after`:
        remarks about how the run came about, said after the run's own)."""
        notices: list[str] = list(self.metadata.get("run_notices", []))  # e.g. settings a loader assumed
        types: dict[str, list[int]] = {}
        sides = self._inputs(src, tgt, options, notices, types)
        self._lengths = side_lengths(sides)
        if device.type == "cuda":  # a run as long as one the GPU had no memory for goes to the CPU at once
            self._gpu_failures.check(options, self._lengths)
        keep = self._keep(device, options, sides)
        self._place(device, options, sides, keep)
        rec = self._recorder(device, options, sides, notices, keep)
        kept = self.reuse.resume_into(rec, resume, inputs)
        ids_of, pad_of = {}, {}
        for side, (pieces, ids, n_real) in sides.items():
            rec.tokens(names.side_entry(side, "tokens"), pieces)
            ids_of[side] = torch.tensor([ids], device=device)  # [1, S] or [1, T]
            pad_of[side] = (torch.arange(len(ids), device=device) >= n_real)[None]  # [1, S] or [1, T]
            rec(names.side_entry(side, "ids"), ids_of[side])
        resolved = options.resolved(self.config, dtype=placing.dtype_name(self.module))  # what the run reads
        src_types = torch.tensor([types["src"]], device=device) if "src" in types else None  # [1, S]
        run = replay.run_of(self.module, resolved, ids_of, pad_of, src_types)
        lock = self._module_lock if self.placement is not None else None  # accelerate's hooks move weights
        if keep != replay.WHOLE and inputs is not None:  # the rest of a layer is recomputed when read
            rec.recompute_layers(replay.LayerReplay(self.module, run, inputs, lock, keep, on_host=rec.host))
        start = time.perf_counter()
        with lock or nullcontext():
            logits = run(resume, rec, inputs)
        entries = rec.entries()
        if not options.record:  # the fast path still returns what the output panel needs
            entries[names.LOGITS] = logits[0]  # [T, V]
        entries[names.PROBS] = output_probs(options.temperature)  # [T, V], softmax on read
        entries.update(lens_entries(self.module, entries, resolved))  # the logit lens, derived on read
        info: dict[str, Any] = {"model": self.name, "compute_ms": (time.perf_counter() - start) * 1000.0}
        info["kept"] = keep  # what the trace stores of each layer (engine/replay.py)
        info[GENERATION_KEY] = self.metadata.get(GENERATION_KEY, {})  # the sampling defaults and their sources
        info["pads"] = sum(len(ids) - n_real for _p, ids, n_real in sides.values())  # <pad> positions (pad_to)
        info["specials"] = {side: self.wrapping(side, src if side == "src" else tgt) for side in sides}
        info.update(chat_info(src, tgt))  # a conversation's token provenance and turns (engine/chat_prompt.py)
        if kept and resume is not None:  # host copies of reused entries stay valid
            info["resumed_from"] = names.layer(resume.stack, resume.layer)
        return Trace(
            entries,
            config=self.config,
            options=resolved,
            device=str(device),
            notices=notices + list(after or []),
            info=info,
            _host=self.reuse.host_copies(kept, entries),
        )

    def next_token(self, trace: Trace) -> tuple[int, str]:
        """The most probable next token after the last decoder position."""
        i = int(trace.read(names.PROBS, -1).argmax())  # only the last position crosses to the host
        return i, self.output_tokenizer.id_to_token(i)

    def generate(
        self, src: Prompt = None, prefix: str = "", max_new_tokens: int = 30, options: RunOptions | None = None
    ) -> Iterator[Trace]:
        """Greedy decoding, or sampling when `options.sample` (engine/sampling.py): yields a Trace per step;
        trace.info['generated'] holds the text so far.

        Encoder-decoder: `src` is encoded and the decoder starts from `prefix`. Decoder-only: the prompt is
        `prefix` (or `src` when no prefix is given), and 'generated' includes it.

        Stops after </s>, after max_new_tokens, or at the model's max length. Each step's Trace is the run's
        with what the step chose added (Trace.with_info): the run's own stays as it was made.

        With the KV cache (engine/generation.py, engine/kv_cache.py): the first Trace holds the prompt's rows,
        each later one only the new token's row (its K and V: the whole cache); info['rows'] says which.
        """
        if not self.config.has_decoder:
            raise ValueError("an encoder-only model has no decoder to generate with")
        options = (options or RunOptions()).validate(self.config)
        return generation.generate(self, src, prefix, max_new_tokens, options)

    def translate(self, src: str, max_new_tokens: int = 40, options: RunOptions | None = None) -> str:
        """The greedy output text (no traces kept)."""
        opts = (options or RunOptions()).replace(record=False)
        text = ""
        for trace in self.generate(src, max_new_tokens=max_new_tokens, options=opts):
            text = trace.info["generated"]
        return text
