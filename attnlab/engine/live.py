"""LiveModel: a Transformer with its tokenizers, run on text. What `attnlab.load()` returns.

`trace()` turns text into a Trace; `generate()` decodes greedily and yields one Trace per new token.
"""

from __future__ import annotations

import gc
import operator
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from functools import partial
from typing import Any

import torch

from attnlab.engine import names, option_rules, replay
from attnlab.engine.budget import HEADROOM, estimate_trace_bytes, fits_on_device, working_bytes
from attnlab.engine.config import ModelConfig
from attnlab.engine.derived import Derived
from attnlab.engine.devices import free_device_memory_of, out_of_device_memory, pick_device, release_device_memory
from attnlab.engine.gpu_failures import GpuFailures
from attnlab.engine.logit_lens import lens_entries
from attnlab.engine.memory import RunTooBig, available_on
from attnlab.engine.model import Transformer
from attnlab.engine.offload import Placement, streamed_layers
from attnlab.engine.options import RunOptions
from attnlab.engine.pairs import INPUT_CUT, pair_side
from attnlab.engine.precision import convert_module, module_dtype, run_dtype
from attnlab.engine.recorder import Recorder
from attnlab.engine.run_budget import run_needs, run_refusal
from attnlab.engine.run_inputs import LayerInputs, Resume
from attnlab.engine.runcache import entries_before, first_changed_layer
from attnlab.engine.tokenizer import Tokenizer
from attnlab.engine.trace import Trace
from attnlab.engine.typed import UNSURE_BELOW, classroom_language, typed_form, unsure_notice
from attnlab.limits import MAX_SENTENCE_CHARS, excerpt

LEAN_ABOVE_BYTES = 64 << 20  # LiveModel.lean_above: whole traces up to this size; layers recomputed on read above
Prompt = str | tuple[str, str] | list[int] | None  # text, a sentence pair, or token ids fed back by generation


class InputError(ValueError):
    """Text or token ids this model cannot read; the message says which and why."""


def checked_ids(ids: Iterable[Any], vocab_size: int, side: str) -> list[int]:
    """Token ids as ints, each a real token of the vocabulary (0 … vocab_size-1)."""
    what = "source" if side == "src" else "decoder input"
    out = []
    for value in ids:
        try:
            i = operator.index(value)  # int, numpy and 0-d torch integers; not floats or strings
        except TypeError:
            i = None
        if i is None or isinstance(value, bool):
            raise InputError(f"the {what} ids must be whole numbers; got {excerpt(value)}")
        if not 0 <= i < vocab_size:
            raise InputError(
                f"the {what} id {i} is not a token of this vocabulary (ids run from 0 to {vocab_size - 1})"
            )
        out.append(i)
    return out


def side_lengths(sides: dict) -> tuple[int, int]:
    """(S, T): the source and decoder-input lengths of a run's sides (0 for a side the model does not read)."""
    lengths = {side: len(ids) for side, (_p, ids, _n) in sides.items()}
    return lengths.get("src", 0), lengths.get("tgt", 0)


def tempered_softmax(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / temperature) over the last dimension, safe for any temperature RunOptions accepts:
    the largest logit is subtracted first, so it becomes exactly 0 (its exp is 1) whatever the temperature,
    the others go to -inf at worst, and no NaN can appear. The argmax never changes.  [T, V] -> [T, V]"""
    shifted = logits - logits.amax(dim=-1, keepdim=True)  # [T, V], max 0
    return torch.softmax(shifted / temperature, dim=-1)


def output_probs(temperature: float) -> Derived:
    """The output distribution softmax(logits / temperature), [T, V], computed from `logits` when read."""
    return Derived("probs", (names.LOGITS,), (float(temperature),))


def with_temperature(trace: Trace, options: RunOptions, config: ModelConfig) -> Trace:
    """`trace` at another output temperature: the same stored entries (shared, not copied), a new `probs`."""
    entries = OrderedDict(trace.entries)
    entries[names.PROBS] = output_probs(options.temperature)
    # host copies already made stay valid; list(): the GUI thread may be adding copies to that trace meanwhile
    host = {n: v for n, v in list(trace._host.items()) if n != names.PROBS}
    info = dict(trace.info, compute_ms=0.0, reused="the previous run's entries (at most the temperature differs)")
    # the options asked for (they differ from the last run's only in fields whose change invalidates nothing
    # but the output: the option table's `invalidates`), in the precision the entries were computed in
    resolved = options.resolved(config, dtype=trace.options.dtype)
    return Trace(
        entries,
        config=config,
        options=resolved,
        device=trace.device,
        notices=list(trace.notices),
        info=info,
        _host=host,
    )


def reused_host_copies(old: Trace, kept: OrderedDict, entries: OrderedDict) -> dict[str, torch.Tensor]:
    """The host copies `old` made of the entries a resumed run `kept` (the same tensors: still valid)."""
    return {n: v for n, v in list(old._host.items()) if n in kept and entries[n] is kept[n]}  # list(): the GUI adds


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
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.name = name
        self.metadata = dict(metadata or {})
        # the last run of each kind, recorded (True) or fast (False): {record: (what decided it, the trace)}.
        # Two, so that an ablated trace and its un-ablated baseline (present/ablation.py) both stay reusable
        # when only the temperature changes; a fast run holds little more than its logits. See trace().
        self._runs: dict[bool, tuple[tuple, Trace]] = {}
        self._last_inputs: LayerInputs | None = None  # the last recorded run's layer inputs (runcache.py)
        # {record: the traces handed out that hold that run's tensors (the run's, its temperature variants)}
        self._handed_out: dict[bool, list[weakref.ref]] = {True: [], False: []}
        # traces of earlier runs still held elsewhere (the one on screen, a pinned one), on the run's device
        self._displaced: list[weakref.ref] = []
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

    # ---- what a run reads --------------------------------------------------------------------------
    def prompt_sides(self, src: Prompt, tgt: Prompt) -> tuple[Prompt, Prompt]:
        """The (encoder input, decoder input) this architecture reads from a (source, target) pair.

        The one place that maps texts onto the stacks: encoder-decoder reads both as given; decoder-only has
        no encoder, and its prompt is `tgt`, or `src` when `tgt` is empty (a prompt typed in the source box);
        encoder-only has no decoder input: its second text, if any, is sentence B of a pair (`reads_pairs`)."""
        if not self.config.has_encoder:
            return None, (tgt if tgt else src)
        if not self.config.has_decoder:
            if self.reads_pairs and isinstance(src, str) and isinstance(tgt, str) and tgt.strip():
                return (src, tgt), None
            return src, None
        return src, tgt

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

    @property
    def config(self) -> ModelConfig:
        return self.module.config

    def spread(self, placement: Placement) -> None:
        """Say that this model's layers were placed by `placement` (engine/offload.py): runs compute on its
        device, and each layer that streams in from elsewhere calls `on_stream` (the app's progress bar)."""
        self.placement = placement
        streamed = streamed_layers(self.module, placement)
        for k, (_number, layer) in enumerate(streamed, start=1):
            layer.register_forward_pre_hook(partial(self._streaming, k, len(streamed)))

    def _streaming(self, k: int, n: int, *_hook_args: object) -> None:
        if self.on_stream is not None:
            self.on_stream(k, n)

    @property
    def device(self) -> torch.device:
        if self.placement is not None:  # some layers live elsewhere: the run's device is where it computes
            return torch.device(self.placement.main)
        return next(self.module.parameters()).device

    # ---- text -> ids -----------------------------------------------------------------------------
    def role(self, side: str) -> str:
        """What a side's token sequence is to the model: "encoder", "encoder-only" or "decoder"."""
        if side == "src" and self.config.arch != "decoder-only":
            return "encoder-only" if self.config.arch == "encoder-only" else "encoder"
        return "decoder"

    def tokenizer(self, side: str) -> Tokenizer:
        """The tokenizer of "src" or "tgt" (a model built without one cannot read that side's text)."""
        tok = self.src_tokenizer if side == "src" else self.tgt_tokenizer
        if tok is None:
            raise ValueError(f"this model has no {'source' if side == 'src' else 'target'} tokenizer")
        return tok

    def typed_form(self, text: str, side: str) -> str:
        """What the model reads of `text` typed on `side`: for a classroom model the corpus form of the
        sentence (engine/typed.py: lower case, "dog." -> "dog .", "don't" -> "do not"); any other model reads
        `text` as it is."""
        language = classroom_language(self.metadata, "decoder" if self.role(side) == "decoder" else "encoder")
        return text if language is None else typed_form(text, language)

    @property
    def output_tokenizer(self) -> Tokenizer:
        """The tokenizer whose ids the output distribution ranges over."""
        return self.tokenizer("tgt" if self.config.has_decoder else "src")

    @property
    def reads_pairs(self) -> bool:
        """Whether this model reads a sentence pair (an encoder-only model whose tokenizer has a pair template,
        BERT and RoBERTa; BERT's segments also get their own token-type embedding)."""
        tok = self.src_tokenizer
        return tok is not None and self.role("src") == "encoder-only" and tok.specials.reads_pairs

    def sentence_pair(self, text: Any) -> tuple[str, str] | None:
        """(A, B) when `text` is a sentence pair this model reads: a tuple of two strings, or one string with
        the separator token between them ("A [SEP] B"); None for one sentence. Only models whose tokenizer
        has a pair template (BERT, RoBERTa: Specials.pair) read pairs."""
        tok, reads = self.src_tokenizer, self.reads_pairs
        if isinstance(text, tuple) and len(text) == 2 and all(isinstance(t, str) for t in text):
            if not reads:
                raise InputError("this model reads one sentence at a time, not a pair of sentences")
            return text[0], text[1]
        sep = tok.specials.sep if tok is not None else None
        if reads and tok is not None and isinstance(text, str) and sep is not None and tok.id_to_token(sep) in text:
            a, _, b = text.partition(tok.id_to_token(sep))
            return a.strip(), b.strip()
        return None

    def _side(
        self, text: Prompt, side: str, pad_to: int, notices: list[str], types: dict | None = None
    ) -> tuple[list[str], list[int], int]:
        """Token strings and ids of one side wrapped in the tokenizer's specials (engine/specials.py; attnlab's
        own: source = pieces + </s>, target = <s> + pieces).

        `text` is a string, a sentence pair (`sentence_pair`; its token types go into `types[side]`), or a
        list of token ids (what generation feeds back, so no text round trip)."""
        tok = self.tokenizer(side)
        specials, role = tok.specials, self.role(side)
        pair = self.sentence_pair(text)
        if pair is not None:
            pieces, ids, n_real, type_ids = pair_side(tok, pair, self.config.max_len, pad_to, notices)
            if types is not None:
                types[side] = type_ids
            return pieces, ids, n_real
        if isinstance(text, (list, tuple)):
            ids = checked_ids(text, tok.vocab_size, side)
        elif text is None or isinstance(text, str):
            text = text or ""
            if len(text) > MAX_SENTENCE_CHARS:  # what the app's boxes hold too; far more than max_len tokens
                notices.append(
                    f"The text has {len(text):,} characters; only the first {MAX_SENTENCE_CHARS:,} were read."
                )
                text = text[:MAX_SENTENCE_CHARS]
            ids = tok.encode(self.typed_form(text, side))[1]
        else:
            raise InputError(
                f"the {'source' if side == 'src' else 'decoder input'} must be text or a list of "
                f"token ids, not {type(text).__name__}"
            )
        n_specials = specials.n_added(role)
        room = self.config.max_len - n_specials
        if len(ids) > room:
            what = "source" if side == "src" else "decoder input"
            extra = f" (+{n_specials} special)" if n_specials else ""
            notices.append(
                f"The {what} has {len(ids)} tokens but {INPUT_CUT} {room}{extra}; "
                f"the last {len(ids) - room} were dropped."
            )
            ids = ids[:room]
        ids = specials.wrap(role, ids)
        if not ids and specials.start_id is not None:  # a model without a forced <s> still needs one token
            ids = [specials.start_id]
            notices.append(f"The input is empty, so the model starts from {tok.id_to_token(ids[0])}.")
        if not ids:  # nothing to run on: no piece of the text, no special token, no start token
            what = "source" if side == "src" else "decoder input"
            how = (
                ": this model has no tokenizer, so type token ids as numbers, e.g. 12 7 40"
                if getattr(tok, "kind", "") == "numbers"
                else ""
            )
            raise InputError(f"the {what} gives no token this model can read{how}")
        n_real = len(ids)
        if pad_to > n_real:
            ids = ids + [specials.pad_id] * (pad_to - n_real)
        return [tok.id_to_token(i) for i in ids], ids, n_real

    def wrapping(self, side: str, text: Prompt = None) -> dict[str, list[str]]:
        """The special tokens this model's tokenizer puts around `side`'s text, as strings: {"before": [...],
        "after": [...]} (and "between" for a sentence pair: RoBERTa's </s></s>). What the tokenization stage
        says; a side without a tokenizer has none."""
        tok = self.src_tokenizer if side == "src" else self.tgt_tokenizer
        if tok is None:
            return {"before": [], "after": []}
        specials, role = tok.specials, self.role(side)
        if side == "src" and self.reads_pairs and self.sentence_pair(text) is not None:
            pair = specials.pair
            named = {part: [tok.id_to_token(i) for i in pair.get(part, [])] for part in ("prefix", "middle", "suffix")}
            return {"before": named["prefix"], "between": named["middle"], "after": named["suffix"]}
        return {
            "before": [tok.id_to_token(i) for i in specials.prefix.get(role, [])],
            "after": [tok.id_to_token(i) for i in specials.suffix.get(role, [])],
        }

    # ---- runs --------------------------------------------------------------------------------------
    def trace(self, src: Prompt = None, tgt: Prompt = None, options: RunOptions | None = None) -> Trace:
        """Run once and record every step.

        encoder-decoder: `src` is the sentence to encode, `tgt` the decoder input (teacher forcing; <s> is
        prepended). decoder-only: `tgt` (or `src` when `tgt` is empty) is the prompt. encoder-only: `src`, or a
        sentence pair `("A", "B")` / "A [SEP] B" for a model whose tokenizer reads pairs (`sentence_pair`).
        `tgt` may also be a list of token ids. See `prompt_sides`.

        A run that differs from the last recorded run (or, for a fast run, the last fast one) only in its
        temperature reuses that run's entries (the output softmax is derived from the logits on read):
        nothing is recomputed. One that differs only in masks re-runs from the first layer whose mask changed
        (engine/runcache.py).
        """
        options = self.checked_options(options or RunOptions())
        src, tgt = self.prompt_sides(src, tgt)
        key = self._run_key(src, tgt, options)
        last = self._runs.get(options.record)
        if last is not None and last[0] == key:
            warmer = with_temperature(last[1], options, self.config)
            self._handed_out[options.record].append(weakref.ref(warmer))  # it shares the run's tensors
            return warmer
        del last
        kept_before = set(self._runs)
        self._forget_runs_unlike(key)
        device = pick_device(options.device)
        resume = self._resume_point(key, device) if options.record else None
        if resume is None and options.record:  # the last recorded run's tensors are of no further use here
            self._runs.pop(True, None)
            self._last_inputs = None
        dropped = [ref for record in kept_before - set(self._runs) for ref in self._handed_out.pop(record, [])]
        self._displaced = [ref for ref in self._displaced + dropped if ref() is not None]
        if device.type == "cuda" and self._displaced and not self._fits_beside(device, src, tgt, options):
            free_device_memory_of(self._displaced)  # one trace at a time on the GPU when two do not fit (issue 23)
            self._displaced = []
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
        self._runs[options.record] = (key, trace)
        sharing = self._handed_out[options.record] if resume is not None else []  # a resumed run shares tensors
        self._handed_out[options.record] = [*sharing, weakref.ref(trace)]
        if options.record:
            self._last_inputs = inputs
        return trace

    def _fits_beside(self, device: torch.device, src: Prompt, tgt: Prompt, options: RunOptions) -> bool:
        """Whether this run fits the GPU's free memory beside the traces of the last run that someone still
        holds (the app keeps one on screen): then they stay where they are, and the new run pays nothing for
        them; else they move to the host first (free_device_memory_of), and the budget counts that memory."""
        gc.collect()  # traces nobody holds are freed first
        sides = self._inputs(src, tgt, options, [], {})
        S, T = side_lengths(sides)
        keep = self._keep(device, options, sides)
        dtype = run_dtype(self.held_dtype, options.precision)
        element = torch.empty((), dtype=dtype).element_size()
        needs = run_needs(self.config, options, S, T, element, self._weights_to_place(device, dtype), keep)
        return needs.total <= HEADROOM * available_on(device)

    def _weights_to_place(self, device: torch.device, dtype: torch.dtype) -> int:
        """Bytes of weights a run on `device` in `dtype` must put there first (0 when they are there)."""
        if self.device == device and module_dtype(self.module) == dtype:
            return 0
        element = torch.empty((), dtype=dtype).element_size()
        return sum(p.numel() for p in self.module.checkpoint_tensors().values()) * element

    def _forget_runs_unlike(self, key: tuple) -> None:
        """Drop the kept runs of other text, weights or model than `key`'s: nothing of theirs can be reused."""
        for record, (kept_key, _trace) in list(self._runs.items()):
            if kept_key[:2] != key[:2] or kept_key[3:] != key[3:]:
                del self._runs[record]
                if record:
                    self._last_inputs = None

    def _resume_point(self, key: tuple, device: torch.device) -> Resume | None:
        """Where a run with `key` may start, given the last one: at the first layer whose mask differs, when
        only masks differ and the last run's tensors are on `device`; None for a full run."""
        last, previous = self._runs.get(True), self._last_inputs
        if last is None or previous is None or last[0][:2] != key[:2] or last[0][3:] != key[3:]:
            return None
        before, after = last[0][2], key[2]
        if not (before.record and after.record) or last[1].device != str(device):
            return None
        where = first_changed_layer(self.config, before, after)
        if where is None or where == ("enc", 0):  # the first encoder layer: nothing to reuse
            return None
        return Resume(where[0], where[1], previous)

    def _run_key(self, src: Prompt, tgt: Prompt, options: RunOptions) -> tuple:
        """What decides every entry of a run but the output softmax: inputs, options but those whose change
        invalidates at most the output (the temperature; option_rules.reuse_key), and the weights (their
        in-place version counters change when anything writes to them)."""
        weights_version = sum(p._version for p in self.module.parameters() if not p.is_inference())
        # (a spread-out model's layers are brought in by accelerate's hooks as inference tensors: no counter)
        src_key, tgt_key = (tuple(x) if isinstance(x, list) else x for x in (src, tgt))  # hashable
        return (src_key, tgt_key, option_rules.reuse_key(options), id(self.module), weights_version)

    def _inputs(
        self, src: Prompt, tgt: Prompt, options: RunOptions, notices: list[str], types: dict | None = None
    ) -> dict:
        """side -> (token strings, ids, real length) for each side this model reads (a sentence pair's token
        types go into `types`)."""
        sides = {}
        if self.config.has_encoder:
            sides["src"] = self._side(src, "src", options.pad_to, notices, types)
        if self.config.has_decoder:
            sides["tgt"] = self._side(tgt, "tgt", options.pad_to, notices)
        return sides

    def _keep(self, device: torch.device, options: RunOptions, sides: dict) -> replay.Keep:
        """What this run stores of each layer (engine/replay.py): everything, unless its whole trace would hold
        more than `lean_above` bytes; then each layer's output (the rest recomputed on read) and, on the CPU
        whenever the run fits the memory there with them, each site's Q, K, V and mask too, so that a head's
        map is derived from them without running its layer again (a GPT-2-small layer at 512 tokens takes
        about half a second on a CPU, a long one seconds; on a GPU a layer takes milliseconds)."""
        if not options.record:
            return replay.WHOLE
        S, T = side_lengths(sides)
        dtype = run_dtype(self.held_dtype, options.precision)
        element = torch.empty((), dtype=dtype).element_size()
        if estimate_trace_bytes(self.config, options, S, T, element) <= self.lean_above:
            return replay.WHOLE
        if device.type != "cpu":
            return replay.OUTPUTS
        weights = self._weights_to_place(device, dtype)
        needs = run_needs(self.config, options, S, T, element, weights, replay.ATTENTION)
        return replay.ATTENTION if needs.total <= HEADROOM * available_on(device) else replay.OUTPUTS

    def _recorder(
        self,
        device: torch.device,
        options: RunOptions,
        sides: dict,
        notices: list[str],
        keep: replay.Keep = replay.WHOLE,
    ) -> Recorder:
        """A recorder that keeps the trace on `device` when it fits there, else copies it to the host."""
        if not options.record or device.type == "cpu":
            return Recorder(options.record)
        S, T = side_lengths(sides)
        element = self.module.sinusoid.element_size()
        trace_bytes = estimate_trace_bytes(self.config, options, S, T, element, keep)
        working = working_bytes(self.config, options, S, T, element, keep)
        fits, free = fits_on_device(device, trace_bytes + working)
        if fits:
            return Recorder(True)
        room = f"{free / 2**20:.0f} MiB free" if free >= 0 else "free memory that could not be read"
        notices.append(
            f"This trace needs about {trace_bytes / 2**20:.0f} MiB on the GPU, and {working / 2**20:.0f} MiB "
            f"more while it runs; the GPU has {room}. The model ran on the GPU and its steps were copied to "
            "the computer's memory as they were computed."
        )
        return Recorder(True, host=True)

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
        kept: OrderedDict = OrderedDict()
        last_recorded = self._runs.get(True)
        if resume is not None and last_recorded is not None:
            if inputs is not None:
                inputs.tensors.update(resume.inputs_so_far().tensors)
            kept = entries_before(last_recorded[1].entries, resume.stack, resume.layer)
            rec.resume_from(kept)  # re-recording tokens and ids below keeps their places
        ids_of, pad_of = {}, {}
        for side, (pieces, ids, n_real) in sides.items():
            rec.tokens(names.side_entry(side, "tokens"), pieces)
            ids_of[side] = torch.tensor([ids], device=device)  # [1, S] or [1, T]
            pad_of[side] = (torch.arange(len(ids), device=device) >= n_real)[None]  # [1, S] or [1, T]
            rec(names.side_entry(side, "ids"), ids_of[side])
        resolved = options.resolved(self.config, dtype=self._dtype_name())  # what the run and its Trace read
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
        info["pads"] = sum(len(ids) - n_real for _p, ids, n_real in sides.values())  # <pad> positions (pad_to)
        info["specials"] = {side: self.wrapping(side, src if side == "src" else tgt) for side in sides}
        host: dict[str, torch.Tensor] = {}
        if kept and last_recorded is not None and resume is not None:  # host copies of reused entries stay valid
            host = reused_host_copies(last_recorded[1], kept, entries)
            info["resumed_from"] = names.layer(resume.stack, resume.layer)
        return Trace(
            entries,
            config=self.config,
            options=resolved,
            device=str(device),
            notices=notices + list(after or []),
            info=info,
            _host=host,
        )

    def _place(self, device: torch.device, options: RunOptions, sides: dict, keep: replay.Keep = replay.WHOLE) -> None:
        """Check that the run fits `device` in its precision (RunTooBig, one line with the numbers, before
        anything is allocated), then put the weights there in the run's dtype (engine/precision.py)."""
        dtype = run_dtype(self.held_dtype, options.precision)
        if self.placement is not None and (device != self.device or dtype != self.held_dtype):
            raise RunTooBig(
                f"this model's weights are spread out ({self.placement.summary()}): it runs on {self.device} in "
                f"{str(self.held_dtype).removeprefix('torch.')} only"
            )
        weights = self._weights_to_place(device, dtype)
        S, T = side_lengths(sides)
        refusal = run_refusal(self.config, options, S, T, dtype, device, weights, keep)
        if refusal:  # what earlier runs left unreferenced is counted once it is given back
            release_device_memory()
            refusal = run_refusal(self.config, options, S, T, dtype, device, weights, keep)
        if refusal:
            raise RunTooBig(refusal)
        if module_dtype(self.module) != dtype:
            convert_module(self.module, dtype)
        if self.device != device:
            self.module.to(device)

    def _dtype_name(self) -> str:
        """The precision the weights run in: 'float32', 'bfloat16', ..."""
        return str(self.module.sinusoid.dtype).removeprefix("torch.")

    def next_token(self, trace: Trace) -> tuple[int, str]:
        """The most probable next token after the last decoder position."""
        i = int(trace.read(names.PROBS, -1).argmax())  # only the last position crosses to the host
        return i, self.output_tokenizer.id_to_token(i)

    def generate(
        self, src: Prompt = None, prefix: str = "", max_new_tokens: int = 30, options: RunOptions | None = None
    ) -> Iterator[Trace]:
        """Greedy decoding: yields a Trace per step; trace.info['generated'] holds the text so far.

        Encoder-decoder: `src` is encoded and the decoder starts from `prefix`. Decoder-only: the prompt is
        `prefix` (or `src` when no prefix is given), and 'generated' includes it.

        Stops after </s>, after max_new_tokens, or at the model's max length.
        """
        if not self.config.has_decoder:
            raise ValueError("an encoder-only model has no decoder to generate with")
        options = (options or RunOptions()).validate(self.config)
        if not isinstance(prefix, str) or not (src is None or isinstance(src, str)):
            raise InputError("generate() takes text: src and prefix must be strings")
        tok = self.tokenizer("tgt")
        src, prompt = self.prompt_sides(src, prefix)  # a decoder-only model's prompt is its prefix
        if isinstance(prompt, list):
            ids = checked_ids(prompt, tok.vocab_size, "tgt")
        elif isinstance(prompt, tuple):  # a decoder's prompt is never a pair (prompt_sides)
            raise InputError("generate() takes one prompt, not a pair of sentences")
        else:
            ids = list(tok.encode(self.typed_form((prompt or "")[:MAX_SENTENCE_CHARS], "tgt"))[1])
        unsure: list[tuple[str, float]] = []  # the chosen tokens whose probability was below UNSURE_BELOW
        for step in range(max_new_tokens):
            trace = self.trace(src=src, tgt=list(ids), options=options)
            next_id, piece = self.next_token(trace)
            prob = float(trace.read(names.PROBS, -1)[next_id])
            if prob < UNSURE_BELOW:
                unsure.append((piece, prob))
            done = next_id == tok.specials.eos or len(ids) + 2 >= self.config.max_len
            if not done:
                ids.append(next_id)
            trace.info.update(next_token=piece, next_id=next_id, generated=tok.decode(ids), finished=done)
            trace.info.update(next_prob=prob, unsure=list(unsure))
            if unsure and (done or step == max_new_tokens - 1):
                trace.notices.append(unsure_notice(unsure))
            yield trace
            if done:
                return

    def translate(self, src: str, max_new_tokens: int = 40, options: RunOptions | None = None) -> str:
        """The greedy output text (no traces kept)."""
        opts = (options or RunOptions()).replace(record=False)
        text = ""
        for trace in self.generate(src, max_new_tokens=max_new_tokens, options=opts):
            text = trace.info["generated"]
        return text
