"""RunOptions: the what-if toggles applied at run time. Changing them never rebuilds or retrains weights."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.patching import Patch, patch_problems
from attnlab.engine.sampling_settings import sampling_problems
from attnlab.limits import excerpt

NormPlacement = Literal["trained", "pre", "post"]
Device = Literal["auto", "cpu", "cuda"]

MIN_TEMPERATURE = 1e-4  # smaller temperatures are refused (see temperature_problems)
MAX_TEMPERATURE = 1e3  # larger ones flatten float32 probabilities to exact ties
PRECISIONS = ("stored", "float32")  # RunOptions.precision: the weights' stored dtype, or float32 (issue 23)
SITE_KINDS = names.SITE_KINDS  # re-exported: the kinds a causal toggle or a per-kind mask names


MIN_ADAPTER_STRENGTH, MAX_ADAPTER_STRENGTH = -1.0, 3.0  # RunOptions.adapter_strength: base -1 … 3 fine-tunes


def adapter_strength_problems(strength: object) -> list[str]:
    """Why a LoRA adapter strength cannot run (empty: it can)."""
    if isinstance(strength, bool) or not isinstance(strength, (int, float)) or not math.isfinite(strength):
        return [f"the adapter strength must be a number (got {excerpt(strength)})"]
    if not MIN_ADAPTER_STRENGTH <= strength <= MAX_ADAPTER_STRENGTH:
        return [
            f"the adapter strength must be from {MIN_ADAPTER_STRENGTH:g} to {MAX_ADAPTER_STRENGTH:g} (got {strength:g})"
        ]
    return []


class OptionsError(ValueError):
    """A combination of toggles that cannot run on this model; the message says why."""


site_kind = names.site_kind  # re-exported for callers that only know the options module


@dataclass(frozen=True)
class RunOptions:
    norm: NormPlacement = "trained"  # "pre"/"post" re-wire the same LayerNorms around each sub-layer
    n_heads: int | None = None  # re-split the same W_Q/W_K/W_V/W_O into this many heads (a divisor of d_model)
    # Causal (look-ahead) mask per site kind; a missing kind means: causal only for decoder self-attention.
    causal: tuple[tuple[str, bool], ...] = ()
    padding_mask: bool = True  # block attention to <pad> keys
    pad_to: int = 0  # pad the source (and target) with <pad> up to this many tokens, to show the padding mask
    # Extra blocked [query, key] cells, per site ("enc.0.self") or per site kind ("enc.self", every layer).
    custom_masks: tuple[tuple[str, frozenset[tuple[int, int]]], ...] = ()
    scale: bool = True  # divide QK^T by sqrt(d_k)
    positional: bool = True  # add (or rotate by) the positional encoding
    residual: bool = True  # the x + sublayer(x) skip connections
    # The norm after each stack's last layer: None as trained; True adds a parameter-free LayerNorm (gamma 1,
    # beta 0) where the model has none (what a post-norm model switched to pre-norm lacks); False skips it.
    final_norm: bool | None = None
    # Plain dot-product attention: Q = K = V = the sub-layer's input x split into heads (cross-attention: Q from
    # the decoder, K = V = the encoder output), and no W_O (the heads' concat is the sub-layer's output).
    projections: bool = True
    # Head ablation: (site, 0-based head, "zero" | "mean"): that head's context is replaced by zeros or by its
    # mean over the query positions before the heads are concatenated. ABLATION_MODES lists the modes.
    ablate: tuple[tuple[str, int, str], ...] = ()
    # Activation patching (engine/patching.py): entries of this run replaced by run A's values, where produced.
    patch: tuple[Patch, ...] = ()
    temperature: float = 1.0  # softmax(logits / temperature) for the output distribution
    # choosing the next token (issue 35, engine/sampling.py): greedy, or drawn after the top-k / top-p cuts
    sample: bool = False  # draw the next token (generation_config.json's do_sample) instead of the argmax
    top_k: int = 50  # keep the k most probable tokens (0: no cut); transformers' default
    top_p: float = 1.0  # keep the fewest tokens whose probability reaches top_p (1: no cut)
    seed: int = 0  # the draws' torch.Generator seed: the same seed, the same tokens
    device: Device = "auto"
    record: bool = True  # capture every intermediate tensor in the Trace; False = fast path
    # weights as stored (issue 23): "stored" runs in the dtype the weights are held in (bf16 stays bf16),
    # "float32" widens them for the run (engine/precision.py; the trace records in the compute dtype)
    precision: str = "stored"
    # a LoRA adapter's strength s (checkpoints/adapters.py): W + s·ΔW, 0 the base model, 1 the fine-tuned one
    adapter_strength: float = 1.0

    # ---- convenience constructors -------------------------------------------------------------
    def replace(self, **changes: Any) -> RunOptions:
        return dataclasses.replace(self, **changes)

    def with_causal(self, kind: str, on: bool) -> RunOptions:
        rest = tuple((k, v) for k, v in self.causal if k != kind)
        return self.replace(causal=rest + ((kind, bool(on)),))

    def with_custom_mask(self, site: str, cells: Iterable[tuple[int, int]]) -> RunOptions:
        rest = tuple((k, v) for k, v in self.custom_masks if k != site)
        blocked = frozenset((int(q), int(k)) for q, k in cells)
        return self.replace(custom_masks=rest + ((site, blocked),) if blocked else rest)

    def toggled_mask_cell(self, site: str, q: int, k: int) -> RunOptions:
        cells = set(self.custom_cells(site, exact=True))
        cells ^= {(q, k)}
        return self.with_custom_mask(site, cells)

    def with_ablation(self, site: str, head: int, mode: str | None) -> RunOptions:
        """These options with head `head` at `site` ablated by `mode` ("zero", "mean"), or not at all (None)."""
        rest = tuple(a for a in self.ablate if (a[0], a[1]) != (site, head))
        return self.replace(ablate=rest + ((site, int(head), mode),) if mode else rest)

    def ablation_of(self, site: str, head: int) -> str | None:
        """How head `head` at `site` is ablated ("zero", "mean"), or None."""
        return next((m for s, h, m in self.ablate if s == site and h == head), None)

    def ablations(self, site: str) -> dict[int, str]:
        """{head: mode} for the heads ablated at `site` (empty: none)."""
        return {h: m for s, h, m in self.ablate if s == site}

    def changed_fields(self, other: RunOptions) -> frozenset[str]:
        """The names of the fields whose values differ in `other` (what a toggle click changed)."""
        return frozenset(
            f.name for f in dataclasses.fields(RunOptions) if getattr(self, f.name) != getattr(other, f.name)
        )

    # ---- queries used by the model --------------------------------------------------------------
    def is_causal(self, site: str) -> bool:
        kind = site_kind(site)
        for k, on in self.causal:
            if k == kind:
                return on
        return kind == "dec.self"

    def custom_cells(self, site: str, exact: bool = False) -> frozenset[tuple[int, int]]:
        """Blocked cells for this site: those set for the site itself plus (unless exact) for its kind."""
        kind = site_kind(site)
        cells: set[tuple[int, int]] = set()
        for k, v in self.custom_masks:
            if k == site or (not exact and k == kind):
                cells |= v
        return frozenset(cells)

    def resolved(self, config: ModelConfig, dtype: str = "float32") -> ResolvedOptions:
        """These options with every "as trained" default made explicit for `config` (the norm placement
        "pre"/"post", the head count) and the model's head layout and precision: what a Trace carries, and
        the one place each fact about a run is answered (ResolvedOptions' properties)."""
        norm = self.norm if self.norm in ("pre", "post") else ("pre" if config.norm_first else "post")
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(RunOptions)}
        values.update(norm=norm, n_heads=self.effective_heads(config))
        values.update(scale=self.scale and config.trained_scale)  # T5 never divides by √dₖ
        output_norm = config.sublayer_norm != "input" and self.norm not in ("pre", "post")  # w-norms: as trained
        return ResolvedOptions(
            **values,
            trained_heads=config.n_heads,
            trained_kv_heads=config.kv_heads,
            dtype=dtype,
            output_norm=output_norm,
        )

    def effective_heads(self, config: ModelConfig) -> int:
        return config.n_heads if self.n_heads is None else self.n_heads

    def problems(self, config: ModelConfig) -> list[str]:
        p: list[str] = []
        if self.n_heads is not None and (not _is_int(self.n_heads) or self.n_heads < 1):
            return [
                f"the head count (n_heads) must be a whole number of at least 1 (got {excerpt(self.n_heads)}); "
                f"leave it unset for the trained {config.n_heads}"
            ] + self._other_problems(config)
        h = self.effective_heads(config)
        width, what = split_width(config)  # w-headdim: H·d_k of the trained heads (d_model unless head_dim)
        if h > width or width % h:
            divisors = [d for d in range(1, width + 1) if width % d == 0]
            p.append(f"{h} heads do not divide {what} {width}; choose one of {divisors}")
        elif config.positional == "rotary" and config.rotary_dims(width // h) % 2:
            p.append(
                f"rotary encoding needs an even number of rotated dimensions, and {width}/{h} heads "
                f"turn {config.rotary_dims(width // h)}"
                if config.rotary_fraction < 1
                else f"rotary encoding needs an even head size, and {width}/{h} is odd"
            )
        elif (h * config.kv_heads) % config.n_heads:
            p.append(
                f"this model shares each K/V head among {config.n_heads // config.kv_heads} Q heads "
                f"({config.n_heads} Q, {config.kv_heads} K/V heads); {h} heads would cut a K/V head apart. "
                f"Choose one of {head_choices(config)}"
            )
        elif config.position_bias == "t5" and h != config.n_heads:
            p.append(
                f"this model's relative position bias has one learned column per trained head, so it keeps its "
                f"{config.n_heads} heads ({h} asked)"
            )
        elif config.rel_key_terms and h != config.n_heads:
            p.append(relative_key_heads_problem(config, h))
        return p + self._other_problems(config)

    def _other_problems(self, config: ModelConfig) -> list[str]:
        p: list[str] = []
        if self.norm not in ("trained", "pre", "post"):
            p.append(f"norm must be 'trained', 'pre' or 'post', not {self.norm!r}")
        p += temperature_problems(self.temperature) + sampling_problems(self)
        if config.parallel_residual and self.norm == "post":
            p.append(
                "this model runs attention and the feed-forward network side by side on the same input "
                "(parallel residual), so there is no post-norm form of it; keep the trained pre-norm"
            )
        if not (self.final_norm is None or isinstance(self.final_norm, bool)):
            p.append(f"final_norm must be None (as trained), True or False (got {excerpt(self.final_norm)})")
        if self.device not in ("auto", "cpu", "cuda"):
            p.append(f"device must be auto, cpu or cuda (got {excerpt(self.device)})")
        p += adapter_strength_problems(self.adapter_strength)
        if self.precision not in PRECISIONS:
            p.append(f"precision must be one of {', '.join(PRECISIONS)} (got {excerpt(self.precision)})")
        if not _is_int(self.pad_to) or not 0 <= self.pad_to <= config.max_len:
            p.append(
                f"pad_to must be between 0 and the model's max length {config.max_len} (got {excerpt(self.pad_to)})"
            )
        try:
            kinds = [k for k, _ in self.causal]
        except (TypeError, ValueError):
            return p + ["causal must be pairs of (site kind, on), like (('dec.self', False),)"]
        p += [
            f"unknown attention site kind {excerpt(k)}; expected one of {SITE_KINDS}"
            for k in kinds
            if k not in SITE_KINDS
        ]
        p += (
            []
            if isinstance(self.projections, bool)
            else [f"projections must be True or False (got {excerpt(self.projections)})"]
        )
        if self.projections is False and config.attn_width != config.d_model:  # w-headdim
            p.append(projections_off_problem(config))
        return (
            p
            + mask_problems(self.custom_masks, config)
            + ablation_problems(self.ablate, config, self.effective_heads(config))
            + patch_problems(self.patch, config, self.effective_heads(config))
        )

    def validate(self, config: ModelConfig) -> RunOptions:
        problems = self.problems(config)
        if problems:
            raise OptionsError("These options cannot run on this model: " + "; ".join(problems))  # one line
        return self


@dataclass(frozen=True)
class ResolvedOptions(RunOptions):
    """The options one run was made with, every "as trained" default made explicit for its model
    (`RunOptions.resolved(config)`): `norm` is "pre" or "post" and `n_heads` is set. Each fact about the run
    is answered here, by one property, and read everywhere (the engine's RunContext, the panels, the
    schematic, the banner): nobody works it out again from the config or the numbers."""

    trained_heads: int = 1  # the model's own Q heads (config.n_heads)
    trained_kv_heads: int = 1  # the model's own K/V heads (config.kv_heads; fewer in grouped-query attention)
    dtype: str = "float32"  # the precision the weights ran in ("float32", "bfloat16", ...)
    # w-norms: each norm sits on its sub-layer's output, x + norm(F(x)) (OLMo-2 as trained), or a second one does,
    # x + post(F(norm(x))) (Gemma 2's sandwich); norm "pre"/"post" moves the norms to the input / after the sum
    # (a sandwich's post norms are then left out). `norm` reads "pre" (a final norm follows).
    output_norm: bool = False

    def __post_init__(self) -> None:
        if self.norm not in ("pre", "post") or self.n_heads is None:
            raise ValueError("ResolvedOptions are made by RunOptions.resolved(config): norm 'pre'/'post', heads set")

    def request(self) -> RunOptions:
        """The plain RunOptions with these values (what a new run is asked for with)."""
        return RunOptions(**{f.name: getattr(self, f.name) for f in dataclasses.fields(RunOptions)})

    @property
    def norm_first(self) -> bool:
        """Whether each norm sits before its sub-layer (pre-norm) in this run."""
        return self.norm == "pre"

    @property
    def heads(self) -> int:
        """The Q heads of this run (the re-split count when the head toggle is set)."""
        assert self.n_heads is not None  # __post_init__
        return self.n_heads

    @property
    def n_kv_heads(self) -> int:
        """K/V heads of this run: as many as Q heads, except in grouped-query attention, where a re-split into
        h heads reads W_K/W_V as h * kv_heads / n_heads heads. With the projections off K = V = x, which has
        every head."""
        if not self.projections:
            return self.heads
        return self.heads * self.trained_kv_heads // self.trained_heads


def head_choices(config: ModelConfig) -> list[int]:
    """Head counts the same weights can be re-split into: divisors of the attention width H·d_k (d_model
    unless head_dim is set: then W_Q's outputs and W_O's inputs, which a re-split must keep), with an even head
    size for rotary encoding, and for grouped-query attention only counts that keep the Q heads a multiple of
    the K/V heads (K/V heads of a split into h heads: h * kv_heads / n_heads, a whole number)."""
    width = config.attn_width
    return [
        h
        for h in range(1, width + 1)
        if width % h == 0
        and (config.positional != "rotary" or config.rotary_dims(width // h) % 2 == 0)
        and (h * config.kv_heads) % config.n_heads == 0
        and (config.position_bias != "t5" or h == config.n_heads)  # a learned bias column per trained head
        and (not config.rel_key_terms or h == config.n_heads)  # BERT relative_key: a d_k-wide distance table
    ]


def relative_key_heads_problem(config: ModelConfig, h: int) -> str:
    """Why a BERT with relative_key positions keeps its heads (engine/relative_key.py)."""
    return (
        f"this model's distance table (position_embedding_type relative_key) is d_k = {config.d_head} numbers "
        f"wide, one head's width, so it keeps its {config.n_heads} heads ({h} asked)"
    )


def split_width(config: ModelConfig) -> tuple[int, str]:
    """(the width the heads split, what it is): d_model, or H·d_k when head_dim sets a head size of its own."""
    if config.head_dim and config.attn_width != config.d_model:
        return config.attn_width, f"the trained attention width H·d_k = {config.n_heads}·{config.head_dim} ="
    return config.d_model, "d_model"


def projections_off_problem(config: ModelConfig) -> str:
    """Why Q = K = V = x cannot run on a model whose heads are not d_model wide together (w-headdim)."""
    return (
        f"the projections cannot be switched off: this model's {config.n_heads} heads of d_k = {config.head_dim} "
        f"are {config.attn_width} wide together, not d_model = {config.d_model}, so x cannot stand in for Q, K, V "
        "and the concatenated heads cannot be the output"
    )


DEFAULT_OPTIONS = RunOptions()
ABLATION_MODES = ("zero", "mean")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def temperature_problems(t: object) -> list[str]:
    """A temperature must be a number from MIN_TEMPERATURE to MAX_TEMPERATURE: below, softmax(logits / t)
    is one-hot to float precision anyway and far below the division overflows; above, the probabilities tie
    and the most likely token could no longer be told."""
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return [f"temperature must be a number, not {excerpt(t)}"]
    if not math.isfinite(t) or t <= 0:
        return [f"temperature must be a positive number (got {t}); it must also be finite"]
    if t < MIN_TEMPERATURE:
        return [
            f"temperature {t:g} is too small to compute; use at least {MIN_TEMPERATURE:g} (which already "
            "puts all the probability on the most likely token)"
        ]
    if t > MAX_TEMPERATURE:
        return [
            f"temperature {t:g} is too large: every token would get the same probability, to float "
            f"precision; use at most {MAX_TEMPERATURE:g}"
        ]
    return []


def site_problem(site: str, config: ModelConfig) -> str:
    """Why `site` (a site like 'enc.0.self' or a kind like 'enc.self') names no attention of this model."""
    if not isinstance(site, str):
        return f"a mask is set on {excerpt(site)}, which is not a site name"
    if site in SITE_KINDS:
        stack, kind = names.site_kind_parts(site)
    else:
        try:
            stack, index, kind = names.split_site(site)
        except ValueError:
            return (
                f"a mask is set on {excerpt(site)}, which is not an attention site (like 'enc.0.self') or "
                f"a site kind ({', '.join(SITE_KINDS)})"
            )
        layers = config.n_encoder_layers if stack == "enc" else config.n_decoder_layers
        if index >= layers:
            return f"a mask is set on {site!r}, but this model's {names.STACK_NAMES[stack]} has {layers} layers"
    has_stack = config.has_encoder if stack == "enc" else config.has_decoder
    if not has_stack or (kind == "cross" and (stack == "enc" or config.arch != "encoder-decoder")):
        return f"a mask is set on {excerpt(site)}, but this {config.arch} model has no such attention"
    return ""


def mask_problems(custom_masks: Any, config: ModelConfig) -> list[str]:
    """Masks on sites this model has, with cells (query, key) inside 0 … max_len-1."""
    try:
        pairs = [(site, cells) for site, cells in custom_masks]
    except (TypeError, ValueError):
        return [
            "custom_masks must be pairs of (site, cells), like (('enc.0.self', {(0, 1)}),); "
            "RunOptions.with_custom_mask builds them"
        ]
    p: list[str] = []
    for site, cells in pairs:
        reason = site_problem(site, config)
        if reason:
            p.append(reason)
            continue
        try:
            bad = [c for c in cells if len(c) != 2 or not all(_is_int(i) and 0 <= i < config.max_len for i in c)]
        except TypeError:
            bad = [cells]
        if bad:
            p.append(
                f"mask cells on {site!r} must be (query, key) positions from 0 to {config.max_len - 1} "
                f"(got {excerpt(bad[0])})"
            )
    return p


def ablation_problems(ablate: Any, config: ModelConfig, n_heads: Any) -> list[str]:
    """Each ablation names a site of this model (like 'enc.0.self'), a head of this run and a known mode."""
    try:
        triples = [(site, head, mode) for site, head, mode in ablate]
    except (TypeError, ValueError):
        return ["ablate must be triples of (site, head, mode), like (('enc.0.self', 2, 'zero'),)"]
    p: list[str] = []
    for site, head, mode in triples:
        if isinstance(site, str) and site in SITE_KINDS:
            p.append(f"an ablation names the site kind {site!r}; name one site, like '{site.replace('.', '.0.')}'")
            continue
        reason = site_problem(site, config)
        if reason:
            p.append(reason.replace("a mask is set on", "an ablation names"))
            continue
        if not _is_int(n_heads):
            continue  # the head count itself is wrong: said once by problems()
        if not _is_int(head) or not 0 <= head < n_heads:
            p.append(
                f"an ablation at {site!r} names head {excerpt(head)}, but this run has {n_heads} heads "
                f"(0 to {n_heads - 1})"
            )
        if mode not in ABLATION_MODES:
            p.append(f"an ablation at {site!r} asks for {excerpt(mode)}; the modes are {', '.join(ABLATION_MODES)}")
    return p


def parse_ablation(text: str) -> tuple[str, int, str]:
    """'enc.0.self:2:zero' -> ('enc.0.self', 2, 'zero'); the mode may be left out (zero). ValueError with a
    message for any other form (RunOptions.problems checks the site and head against a model)."""
    parts = text.split(":")
    if len(parts) == 2:
        parts.append("zero")
    if len(parts) != 3 or not parts[1].strip().isdigit():
        raise ValueError(f"an ablation is written SITE:HEAD[:MODE], like enc.0.self:2:zero (got {excerpt(text)})")
    site, head, mode = parts[0].strip(), int(parts[1]), parts[2].strip()
    if mode not in ABLATION_MODES:
        raise ValueError(f"the ablation mode must be one of {', '.join(ABLATION_MODES)} (got {excerpt(mode)})")
    return site, head, mode
