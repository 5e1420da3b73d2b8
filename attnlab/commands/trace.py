"""`attnlab trace`: run a checkpoint on a sentence and save every intermediate tensor to an .npz file.

Each trace entry is stored under its dotted name ("enc.0.self.weights" -> [heads, S, S]); token lists as
unicode arrays, so `np.load(path, allow_pickle=False)` reads everything. The entries are written one at a
time (a lean run's layers recomputed one at a time, engine/trace_file.py); the file's size is said first, and a
write that cannot fit the memory there is (ATTNLAB_MEMORY_LIMIT included) is refused in one line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from attnlab.commands.loading import add_import_arguments, import_settings, load_any
from attnlab.commands.refusal import refuse
from attnlab.commands.trace_patch import add_patch_arguments, patch_asks, patched_trace
from attnlab.engine import names, option_rules

if TYPE_CHECKING:
    from attnlab.engine.chat_prompt import Conversation
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        default="bundled:translation",
        help="a .safetensors/.pt checkpoint, a .gguf file, a Hugging Face folder, a nanoGPT ckpt.pt, or "
        "bundled:NAME (default: bundled:translation)",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--chat",
        metavar="CONVERSATION.json",
        default=None,
        help='a conversation for a model with a chat template: a JSON list of {"role": "system"|"user"|"assistant", '
        '"content": "..."} (or {"messages": [...], "add_generation_prompt": false}); rendered by the template as '
        "transformers' apply_chat_template does, with the generation prompt unless it says false",
    )
    source.add_argument(
        "--src",
        help="source sentence (a decoder-only model's prompt); for a model that reads sentence pairs (BERT, "
        'RoBERTa, MPNet, XLM-R) a pair as "A [SEP] B", or with the model\'s own separator ("A </s></s> B"): '
        "either is read in the family's own pair layout",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--tgt", default=None, help="decoder input for teacher forcing (<s> is prepended)")
    what.add_argument(
        "--generate",
        type=int,
        metavar="N",
        default=None,
        help="decode up to N tokens greedily; the trace of the LAST step is saved",
    )
    option_rules.add_option_arguments(parser)  # --norm --heads --no-scale ... --device: the option table
    parser.add_argument(
        "--training-step",
        type=int,
        metavar="N",
        default=None,
        help="run the model's weights at training step N instead of the trained ones (one of the steps kept in "
        "the <checkpoint stem>.snapshots.safetensors beside it; attnlab info lists them)",
    )
    parser.add_argument("--out", required=True, help="where to write the trace (.npz)")
    parser.add_argument(
        "--no-lens",
        action="store_true",
        help="leave the logit lens (lens.ids, lens.probs: every layer's top tokens) out of the file; it costs "
        "one projection onto the whole vocabulary per layer and position, several times the run itself",
    )
    add_patch_arguments(parser)  # --patch-from --patch --answer --against (issue 37)
    add_import_arguments(parser, run_options=True)


def fail(message: str) -> int:
    return refuse("attnlab trace", message)


def options_from(args: argparse.Namespace, base: RunOptions | None = None) -> RunOptions:
    """The RunOptions the flags ask for over `base` (the model's sampling defaults; ValueError naming the flag
    for a value it cannot read, like an ablation written in another form)."""
    return option_rules.options_from_args(args, base)


def model_at_step(model: LiveModel, step: int) -> LiveModel:
    """The same model with its weights at training step `step` (CheckpointError without snapshots)."""
    from attnlab.checkpoints.snapshots import load_snapshots

    return load_snapshots(model).model_at(step)


def read_conversation(path: str) -> Conversation:
    """The Conversation in a JSON file (ValueError in one line: unreadable, not JSON, not messages)."""
    from attnlab.bounded_read import MAX_SMALL_JSON_BYTES, read_json
    from attnlab.engine.chat_prompt import Conversation

    return Conversation.from_json(read_json(path, "the conversation file", MAX_SMALL_JSON_BYTES))


def write_trace(trace: Trace, out: str, skip: frozenset[str] = frozenset()) -> bool:
    """Write the trace to `out` one entry at a time, after saying how big the file will be; False (one line on
    stderr, nothing written) when the write cannot fit the memory there is or the free space of `out`'s folder
    (engine/trace_file.npz_refusal)."""
    from attnlab.engine.trace_file import npz_refusal, plan_npz

    plan = plan_npz(trace, skip)
    refusal = npz_refusal(plan, out)
    if refusal:
        fail(refusal + ".")
        return False
    said = plan.summary(out)
    print(said[0].upper() + said[1:] + "…", flush=True)
    trace.save_npz(out, plan)  # entry after entry, in run order (engine/trace_file.write_npz)
    return True


def run(args: argparse.Namespace) -> int:
    from attnlab.checkpoints import CheckpointError
    from attnlab.engine.config import ConfigError
    from attnlab.engine.generation import whole_trace
    from attnlab.engine.live import out_of_device_memory
    from attnlab.engine.options import OptionsError, RunOptions
    from attnlab.engine.sampling_settings import with_model_defaults

    if args.generate is not None and args.generate < 1:
        return fail(f"--generate needs a positive number of tokens (got {args.generate}).")
    try:
        asks = patch_asks(args)
    except ValueError as e:
        return fail(f"{e}.")
    try:
        model = load_any(args.checkpoint, **import_settings(args))
        if args.training_step is not None:
            model = model_at_step(model, args.training_step)
    except CheckpointError as e:
        return fail(str(e))
    except ValueError as e:  # a step the snapshots do not hold
        return fail(f"--training-step: {e}.")
    try:
        options = options_from(args, with_model_defaults(RunOptions(), model.metadata))
    except ValueError as e:
        return fail(f"{e}.")
    generated = None
    try:
        src = args.src if args.chat is None else read_conversation(args.chat)
    except ValueError as e:
        return fail(f"--chat: {e}.")
    if args.chat is not None and args.generate is not None:
        return fail("--generate takes --src text; trace a --chat conversation without it.")
    try:
        options.validate(model.config)
        if args.generate is not None:
            if not model.config.has_decoder:
                return fail("--generate needs a model with a decoder, and this one is encoder-only.")
            last: Trace | None = None
            for last in model.generate(args.src, max_new_tokens=args.generate, options=options):  # noqa: B007
                pass
            if last is None:  # generate yields at least one step for N >= 1
                return fail("the model generated no step to save.")
            trace = whole_trace(model, args.src, "", last, options)  # every row, not the step's one
            generated = trace.info["generated"]
        elif asks:
            trace = patched_trace(model, args, options, asks)
        else:
            trace = model.trace(src, args.tgt, options)
    except (OptionsError, ConfigError, ValueError, RuntimeError) as e:
        return fail(str(e))
    out = args.out if args.out.endswith(".npz") else args.out + ".npz"  # what numpy would name it anyway
    if generated is not None:
        print(f"Generated: {generated}")
    try:
        if not write_trace(trace, out, frozenset((names.LENS_IDS, names.LENS_PROBS)) if args.no_lens else frozenset()):
            return 2
    except OSError as e:
        return fail(f"cannot write {out!r}: {e.strerror or e}.")
    except RuntimeError as e:
        if not out_of_device_memory(e):
            raise
        return fail(
            f"the GPU ran out of memory while computing the trace's derived steps for {out!r}; nothing was "
            "written. Run with --device cpu, or with fewer tokens."
        )
    notices = list(model.metadata.get("notices", [])) + list(trace.notices)
    print(f"Saved {len(trace)} trace entries to {out}.")
    for notice in notices:
        print(f"Notice: {notice}")
    return 0
