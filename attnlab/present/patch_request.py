"""A patch asked for in words (issue 37): a lesson step's `patch = { from = "…", entry = "…", position = 2,
head = 3 }` and `attnlab trace --patch-from "…" --patch ENTRY[:POSITION[:HEAD]]`.

A patch carries run A's tensors (engine/patching.py), so a lesson or a command names run A by its sentence and
its run is computed when the patch is applied (`patched_runs`, or the Session's worker for a lesson step).
Heads count from 1 (as a lesson's `head`, `attnlab render --head` and the banner's words), positions from 0
(as the banner and the patching map's columns). Every refusal is one line. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.engine.patching import Patch, PatchError, entry_problem, has_heads, patchable

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.live import LiveModel
    from attnlab.engine.options import RunOptions
    from attnlab.engine.trace import Trace

# a lesson's patch table: run A's sentence and decoder input, then what of run B is replaced
PATCH_KEYS = ("from", "from_tgt", "entry", "head", "position")
MAX_TEXT = 2000
ENTRY_HINT = (
    "name a site's q, k, v, context or out (dec.2.cross.out), a layer's ffn.out (enc.1.ffn.out) or out (dec.0.out)"
)


@dataclass(frozen=True)
class PatchAsk:
    """Replace `entry` of run B (head `head`, counted from 1; position `position`, from 0; all of it when both
    are None) with its value in run A, the run of `src` (decoder input `tgt`; None: run B's)."""

    src: str
    entry: str
    head: int | None = None
    position: int | None = None
    tgt: str | None = None

    def table(self) -> dict[str, Any]:
        """The lesson's patch table (what parse_table reads back to an equal PatchAsk)."""
        found: dict[str, Any] = {"from": self.src}
        if self.tgt is not None:
            found["from_tgt"] = self.tgt
        found["entry"] = self.entry
        for key in ("head", "position"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        return found


def name_problem(entry: str) -> str:
    """Why `entry` names nothing a patch can replace, whatever the model ('' when it may)."""
    return "" if patchable(entry) else f"{entry!r} cannot be patched; {ENTRY_HINT}"


def _whole(value: object, what: str, least: int) -> int | None:
    """A whole number ≥ `least`, or None when absent (ValueError in one line otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{what} must be a whole number ≥ {least}, not {value!r}")
    return value


def _text(table: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = table.get(key)
    if value is None:
        if required:
            raise ValueError(f"the patch needs '{key}'" + (" (run A's sentence)" if key == "from" else ""))
        return None
    if not isinstance(value, str):
        raise ValueError(f"the patch's '{key}' must be a string, not {type(value).__name__}")
    if not value.strip() or len(value) > MAX_TEXT:
        raise ValueError(f"the patch's '{key}' must be 1 to {MAX_TEXT} characters long")
    return value


def parse_table(value: object) -> PatchAsk:
    """A lesson step's `patch` table as a PatchAsk (ValueError in one line: unknown keys, types, an entry no
    patch can replace)."""
    if not isinstance(value, dict):
        raise ValueError('\'patch\' must be a table like { from = "…", entry = "dec.2.cross.out", position = 2 }')
    extra = sorted(set(value) - set(PATCH_KEYS))
    if extra:
        raise ValueError(f"unknown patch key {', '.join(map(repr, extra))}; known keys: {', '.join(PATCH_KEYS)}")
    src, entry = _text(value, "from", required=True), _text(value, "entry", required=True)
    assert src is not None and entry is not None  # _text raised otherwise
    problem = name_problem(entry)
    if problem:
        raise ValueError(problem)
    return PatchAsk(
        src,
        entry,
        _whole(value.get("head"), "the patch's 'head' (counted from 1)", 1),
        _whole(value.get("position"), "the patch's 'position' (counted from 0)", 0),
        _text(value, "from_tgt"),
    )


def parse_spec(spec: str, src: str, tgt: str | None = None) -> PatchAsk:
    """`ENTRY[:POSITION[:HEAD]]` (an empty POSITION: every position) patched from the run of `src` (ValueError
    in one line)."""
    parts = spec.split(":")
    if len(parts) > 3 or not parts[0]:
        raise ValueError(f"--patch {spec!r}: write ENTRY[:POSITION[:HEAD]], like dec.2.cross.context:2:3")
    problem = name_problem(parts[0])
    if problem:
        raise ValueError(f"--patch: {problem}")
    numbers: list[int | None] = []
    for what, text, least in zip(("POSITION (from 0)", "HEAD (from 1)"), parts[1:], (0, 1), strict=False):
        if text == "":
            numbers.append(None)
            continue
        if not (text.isascii() and text.isdigit()):
            raise ValueError(f"--patch {spec!r}: {what} must be a whole number, not {text!r}")
        numbers.append(_whole(int(text), f"--patch {spec!r}: {what}", least))
    position, head = (numbers + [None, None])[:2]
    return PatchAsk(src, parts[0], head, position, tgt)


def model_problem(ask: PatchAsk, config: ModelConfig) -> str:
    """Why `ask` cannot run on a model of `config`, known before any run ('' when it may): a layer it lacks, a
    stack or a cross-attention it lacks."""
    stack, index = names.layer_position(ask.entry) or ("enc", 0)  # name_problem refused entries outside layers
    has_stack = config.has_encoder if stack == "enc" else config.has_decoder
    layers = config.n_encoder_layers if stack == "enc" else config.n_decoder_layers
    what = "encoder" if stack == "enc" else "decoder"
    if not has_stack:
        return f"patch {ask.entry}: this {config.arch} model has no {what}"
    if index >= layers:
        return f"patch {ask.entry}: this model has {layers} {what} layers ({stack}.0 to {stack}.{layers - 1})"
    site = names.site_of(ask.entry)
    if site is not None and names.site_kind(site) == "dec.cross" and not config.has_encoder:
        return f"patch {ask.entry}: this {config.arch} model has no cross-attention"
    return ""


def patch_of(ask: PatchAsk, a: Trace) -> Patch:
    """The Patch `ask` names, with run A's values (PatchError in one line: a layer, head or position run A
    lacks)."""
    problem = model_problem(ask, a.config)
    if problem:
        raise PatchError(problem)
    if ask.entry not in a:
        raise PatchError(f"patch {ask.entry}: run A has no such entry")
    value = a.device_value(ask.entry).detach()  # [H, T, dk] or [T, d]
    positions = value.shape[-2] if has_heads(ask.entry) else value.shape[0]
    if ask.position is not None and ask.position >= positions:
        raise PatchError(
            f"patch {ask.entry}: position {ask.position} is out of range; run A has {positions} positions there "
            f"(0 to {positions - 1})"
        )
    if ask.head is not None and not has_heads(ask.entry):
        raise PatchError(f"patch {ask.entry}: it has no heads; patch a position of it or all of it")
    from attnlab.engine.patch_sweep import patch_from

    patch = patch_from(a, ask.entry, None if ask.head is None else ask.head - 1, ask.position)
    problem = entry_problem(patch, a.config, a.n_heads)
    if problem:
        raise PatchError(f"patch {ask.entry}: {problem}" if not problem.startswith(ask.entry) else problem)
    return patch


def run_a(model: LiveModel, ask: PatchAsk, tgt_b: Any, options: RunOptions) -> Trace:
    """Run A of `ask`: its sentence and decoder input, run B's options without patches. An encoder-decoder's run A
    reads run B's decoder input `tgt_b` (as typed, before prompt_sides) unless the ask names its own; a
    decoder-only model's prompt is the ask's sentence alone (B's text is not A's)."""
    both = model.config.has_encoder and model.config.has_decoder
    tgt = ask.tgt if ask.tgt is not None or not both else tgt_b
    return model.trace(*model.prompt_sides(ask.src, tgt), options.replace(patch=()))


def patched_runs(
    model: LiveModel, src: str, tgt: str | None, options: RunOptions, asks: tuple[PatchAsk, ...]
) -> tuple[Trace, Trace, Trace]:
    """(run A, run B, run B patched): B is `src`/`tgt` with `options`; each ask's patch comes from its run A
    (the first ask's run A is returned; asks naming the same sentence share one run). PatchError in one line
    when the runs do not pair (other lengths) or an ask names what run A lacks."""
    from attnlab.engine.patch_sweep import check_pair

    src_b, tgt_b = model.prompt_sides(src, tgt)
    b = model.trace(src_b, tgt_b, options.replace(patch=()))
    runs: dict[tuple[str, str | None], Trace] = {}
    patches = []
    for ask in asks:
        key = (ask.src, ask.tgt)
        if key not in runs:
            runs[key] = run_a(model, ask, tgt, options)
            check_pair(runs[key], b)
        patches.append(patch_of(ask, runs[key]))
    patched = model.trace(src_b, tgt_b, options.replace(patch=tuple(patches)))  # resumed at the patched layer
    return runs[(asks[0].src, asks[0].tgt)], b, patched


def token_id(model: LiveModel, text: str, flag: str) -> int:
    """The output token `text` names: '#ID', a token as the vocabulary writes it ('ĠMary', '##es'), or a text
    that is one token (' Mary'); ValueError in one line otherwise."""
    tok = model.output_tokenizer
    if text.startswith("#") and text[1:].isdigit():
        found = int(text[1:])
        if found >= tok.vocab_size:
            raise ValueError(f"{flag} {text}: the vocabulary has {tok.vocab_size} tokens")
        return found
    if text in tok.vocab:
        return tok.vocab.index(text)
    pieces, ids = tok.encode(text)
    hidden = tok.specials.hidden_ids()  # <s>, </s>, <pad>: what an encoding adds around the text
    kept = [(p, i) for p, i in zip(pieces, ids, strict=False) if i not in hidden]
    if len(kept) != 1:
        said = ", ".join(repr(p) for p, _ in kept) or "nothing"
        raise ValueError(f"{flag} {text!r} is {len(kept)} tokens ({said}); name one token (or #ID)")
    return kept[0][1]


__all__ = ["PatchAsk", "parse_spec", "parse_table", "patched_runs"]
