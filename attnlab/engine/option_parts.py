"""The parts the option table (engine/option_specs.py) is made of: for a given model, the values a control
offers and why it is unavailable, and why a value departs from training (Qt-free)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnlab.engine import names, patching
from attnlab.engine import options as run_options  # w-headdim: projections_off_problem
from attnlab.engine.config import ModelConfig
from attnlab.engine.option_spec import Choice, Control, LessonKey, RunFacts
from attnlab.engine.options import PRECISIONS, ResolvedOptions, RunOptions, head_choices, parse_ablation

SHAPE, MASKS, PARTS, OUTPUT_GROUP = "Shape of the computation", "Masks", "Switch parts off", "Output and display"
NORM_CHOICES = (("trained", "As trained"), ("pre", "Pre-norm"), ("post", "Post-norm"))  # RunOptions.norm values


def cuda_available() -> bool:
    import torch  # late: the option table is read by `attnlab trace --help` too

    return torch.cuda.is_available()


def switch_off(name: str) -> Callable[[RunOptions, bool], RunOptions]:
    """A --no-X flag: when given, the boolean field `name` is False."""
    return lambda options, given: options.replace(**{name: False}) if given else options


def unless_none(name: str) -> Callable[[RunOptions, object], RunOptions]:
    """A flag whose absence (None) keeps the field as trained."""
    return lambda options, value: options if value is None else options.replace(**{name: value})


# ---- norm placement and the final norm ------------------------------------------------------------------------
def _trained_norm(config: ModelConfig) -> str:
    return "pre" if config.norm_first else "post"


def norm_choices(config: ModelConfig) -> tuple[Choice, ...]:
    trained = dict(NORM_CHOICES)[_trained_norm(config)].lower()
    if config.sublayer_norm != "input":  # w-norms: OLMo-2, Gemma 2
        trained = "norm on each sub-layer's output" if config.sublayer_norm == "output" else "sandwich"
    return (Choice("trained", f"As trained ({trained})"), *(Choice(v, t) for v, t in NORM_CHOICES[1:]))


def norm_tip(config: ModelConfig) -> str:
    kind = "RMSNorm" if config.norm == "rmsnorm" else "LayerNorm"
    return f"Where {kind} sits around each sub-layer (the same trained norms, moved)"


def final_norm_on(config: ModelConfig, options: RunOptions) -> bool:
    """Whether a run with these options normalises each stack's output (trained or parameter-free norm)."""
    return config.final_norm if options.final_norm is None else bool(options.final_norm)


def norm_departs(config: ModelConfig, options: RunOptions, run: RunFacts) -> list[str]:
    placement, trained = options.norm, _trained_norm(config)
    if config.sublayer_norm != "input":  # w-norms: OLMo-2 x + norm(F(x)), Gemma 2's sandwich; pre/post move norms
        moved = isinstance(options, ResolvedOptions) and not options.output_norm
        what = "each norm on its sub-layer's output" if config.sublayer_norm == "output" else "sandwich norms"
        return [f"{placement}-norm on a model trained with {what}"] if moved else []
    if placement == trained:
        return []
    if placement == "pre" and not final_norm_on(config, options):
        peak = run.peak_logit()
        size = f", logits reach ~{peak:.0f}" if peak is not None else ""
        return [f"pre-norm without a final LayerNorm: the residual stream is never normalised before the output{size}"]
    return [
        f"{placement}-norm on a model trained {trained}-norm: each LayerNorm now sees vectors "
        "its γ and β were never fitted to"
    ]


def final_norm_departs(config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    if options.final_norm is False and config.final_norm:
        return ["the trained final LayerNorm is skipped"]
    if options.final_norm and not config.final_norm and options.norm == _trained_norm(config):
        return ["a final LayerNorm the model was trained without is added"]
    return []


def final_norm_unavailable(config: ModelConfig, options: RunOptions) -> str | None:
    """The toggle means something for a pre-norm run of a model trained without a final norm, for a model that
    has one (to skip it), or once a choice was made."""
    if config.final_norm or options.resolved(config).norm_first or options.final_norm is not None:
        return None
    return "Not needed here: this post-norm run normalises every sub-layer's output; a pre-norm run can add one"


# ---- heads ----------------------------------------------------------------------------------------------------
def heads_tip(config: ModelConfig) -> str:
    """Why the Heads list holds the counts it holds (grouped-query attention allows fewer)."""
    tip = "Re-split the same W_Q, W_K, W_V, W_O into this many heads"
    if config.kv_heads < config.n_heads:
        tip += (
            f". Grouped-query attention ({config.n_heads} Q heads share {config.kv_heads} K/V heads): only "
            "counts that keep the Q heads a whole multiple of the K/V heads are listed, so no K/V head is "
            "cut apart"
        )
    if config.positional == "rotary":
        tip += "; rotary positions need an even head size"
    if config.rel_key_terms:  # BERT relative_key (engine/relative_key.py)
        tip += f". Only the trained {config.n_heads}: the distance table is one head (d_k = {config.d_head}) wide"
    if config.attn_width != config.d_model:  # w-headdim
        tip += (
            f". This model's heads have d_k = head_dim = {config.d_head}: W_Q makes {config.attn_width} numbers a "
            f"token (H·d_k, not d_model = {config.d_model}), so only counts that divide {config.attn_width} are listed"
        )
    return tip


def projections_unavailable(config: ModelConfig, _options: RunOptions) -> str | None:
    """Q = K = V = x needs heads that are d_model wide together (w-headdim: not so when head_dim is set)."""
    if config.attn_width == config.d_model:
        return None
    reason = run_options.projections_off_problem(config)
    return reason[0].upper() + reason[1:]


def head_choice_items(config: ModelConfig) -> tuple[Choice, ...]:
    return tuple(Choice(h, f"{h} (trained)" if h == config.n_heads else str(h)) for h in head_choices(config))


def heads_departs(config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    if options.n_heads is None or options.n_heads == config.n_heads:
        return []
    return [
        f"{options.n_heads} heads instead of the trained {config.n_heads}: each head now mixes "
        "slices that belonged to different trained heads"
    ]


# ---- masks ----------------------------------------------------------------------------------------------------
CAUSAL_TIPS = {
    "dec": "Decoder self-attention may not look at later tokens",
    "enc": "Also hide later tokens from the encoder (it normally sees them all)",
}


def causal_control(stack: str, attr: str, name: str, text: str) -> Control:
    def has_stack(config: ModelConfig) -> bool:
        return config.has_decoder if stack == "dec" else config.has_encoder

    def unavailable(config: ModelConfig, _options: RunOptions) -> str | None:
        return (
            None
            if has_stack(config)
            else f"Not meaningful for this model: it has no {names.STACK_NAMES[stack]} ({config.arch})"
        )

    return Control(
        attr,
        name,
        "check",
        MASKS,
        None,
        CAUSAL_TIPS[stack],
        text=text,
        unavailable=unavailable,
        shown=lambda o, c: has_stack(c) and o.is_causal(f"{stack}.0.self"),
        written=lambda o, _c, on: o.with_causal(f"{stack}.self", bool(on)),
    )


CAUSAL_DEPARTS = {  # site kind -> why the opposite of how it was trained departs (the banner's words)
    "dec.self": "the decoder's causal mask is off: each position now sees the tokens after it, which it never could "
    "in training (its prediction can read the answer)",
    "enc.self": "the encoder's causal mask is on: each token now sees only the tokens before it, though the encoder "
    "was trained reading the whole sentence",
    "dec.cross": "cross-attention is masked causally: decoder position t now sees only the first t + 1 source tokens, "
    "not the whole sentence it was trained on",
}


def causal_departs(config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    """A causal mask switched against training at a kind of site the model has (trained: causal decoder
    self-attention only)."""
    has = {"enc.self": config.has_encoder, "dec.self": config.has_decoder}
    has["dec.cross"] = config.has_encoder and config.has_decoder
    return [
        reason
        for kind, reason in CAUSAL_DEPARTS.items()
        if has[kind] and options.is_causal(_first_site(kind)) != (kind == "dec.self")
    ]


def _first_site(kind: str) -> str:
    """'dec.cross' -> 'dec.0.cross': a site of that kind (the causal toggle is per kind)."""
    stack, attention = names.site_kind_parts(kind)
    return names.site(names.layer(stack, 0), attention)


def padding_departs(_config: ModelConfig, options: RunOptions, run: RunFacts) -> list[str]:
    """The padding mask off departs only when the inputs hold <pad> tokens: then real tokens attend to them."""
    if options.padding_mask:
        return []
    pads = run.pads()
    if not pads:
        return []
    return [
        f"the padding mask is off: every token also attends to the {pads} <pad> token{'s' if pads > 1 else ''}, "
        "which training always hid"
    ]


def custom_mask_departs(_config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    if not options.custom_masks:
        return []
    cells = sum(len(c) for _, c in options.custom_masks)
    where = ", ".join(site for site, c in options.custom_masks if c)
    return [
        f"{cells} attention cell{'s are' if cells > 1 else ' is'} blocked by hand ({where}): those queries no "
        "longer see keys they saw in training"
    ]


def ablation_departs(_config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    if not options.ablate:
        return []
    heads = ", ".join(f"{site} head {head + 1} ({mode})" for site, head, mode in options.ablate)
    return [f"heads are ablated, their output replaced by zeros or by its mean: {heads}"]


def patch_changed(before: RunOptions, after: RunOptions, site: str) -> bool:
    """Whether the patches inside the layer of `site` differ (the run cache resumes at that layer)."""
    stack, index, _kind = names.split_site(site)
    return patching.layer_patches(before.patch, stack, index) != patching.layer_patches(after.patch, stack, index)


def patch_departs(_config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    return patching.departs(options.patch)


def causal_problem(value: dict) -> str | None:
    for kind, on in value.items():
        if kind not in names.SITE_KINDS or not isinstance(on, bool):
            return (
                f"toggle 'causal' maps a site kind ({', '.join(names.SITE_KINDS)}) to true or false, "
                f"not {kind!r} = {on!r}"
            )
    return None


def with_causal_table(options: RunOptions, table: dict) -> RunOptions:
    for kind, on in dict(table).items():
        options = options.with_causal(kind, on)
    return options


def masked_cells_text(options: RunOptions, _config: ModelConfig) -> str:
    cells = sum(len(c) for _, c in options.custom_masks)
    return f"{cells} cell(s) blocked by hand" if cells else "Click cells on a 'mask' stage to block them by hand."


# ---- parts switched off ---------------------------------------------------------------------------------------
POSITIONAL_TEXTS = {
    "rotary": "Rotary positions (RoPE)",
    "alibi": "ALiBi position bias",
    "t5": "Relative position bias",
    "relative": "Relative positions (c2p, p2c)",
    "relative_key": "Relative positions (Q·R, K·R)",
}  # the check's label
POSITIONAL_TIPS = {
    "sinusoidal": "Add the position to each token",
    "learned": "Add the learned position vector to each token",
    "rotary": "Rotate Q and K by each token's position inside every attention (rotary encoding)",
    "none": "Not meaningful for this model: it has no positional encoding",
    "relative": "Add DeBERTa's relative-position terms (content → position, position → content) to every "
    "score, and the learned position vector where the model has one",
    "alibi": "Add each head's ALiBi bias m_h · j to its attention scores (the model's only position signal)",
    "t5": "Add each head's learned relative position bias to its scores (and the position table, if the model has one)",
    "relative_key": "Add BERT's relative_key terms Q·R(i − j) (and K·R(i − j) for relative_key_query) to every score: "
    "the model's only position signal",
}


def position_kind(config: ModelConfig) -> str:
    """How the model's positions enter (ModelConfig.positions_kind: sinusoidal, learned, rotary, alibi, t5,
    relative for DeBERTa's disentangled terms, none)."""
    return config.positions_kind


def positional_label(config: ModelConfig) -> str:
    return POSITIONAL_TEXTS.get(position_kind(config), "Positional encoding")


def positional_departs(config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    if options.positional or config.positions_kind == "none":
        return []
    return [
        f"positional encoding is off, but the model was trained with {config.positions_kind} "
        "positions: it now reads the sentence as a bag of words"
    ]


UNSCALED_TIP = "Not meaningful for this model: it was trained without ÷√dₖ (T5), so its scores are never divided"


def scale_departs(config: ModelConfig, options: RunOptions, _run: RunFacts) -> list[str]:
    if options.scale or not config.trained_scale:
        return []
    return ["scores are not divided by √dₖ: every softmax is sharper than in training"]


def off_reason(name: str, reason: str) -> Callable[[ModelConfig, RunOptions, RunFacts], list[str]]:
    return lambda _config, options, _run: [] if getattr(options, name) else [reason]


def check(attr: str, name: str, group: str, text: str, tip: str, **more: Any) -> Control:
    return Control(attr, name, "check", group, None, tip, text=text, **more)


def bool_key(key: str) -> LessonKey:
    return LessonKey(key, (bool,))


def at_least(key: str, low: int) -> Callable[[int], str | None]:
    return lambda value: f"toggle '{key}' cannot be {value}" if value < low else None


def device_choices(_config: ModelConfig) -> tuple[Choice, ...]:
    return (Choice("cpu", "CPU"), Choice("cuda", "GPU (CUDA)", cuda_available()))


def device_shown(options: RunOptions, _config: ModelConfig) -> str:
    return options.device if options.device != "auto" else ("cuda" if cuda_available() else "cpu")


def parsed_ablations(options: RunOptions, texts: list[str]) -> RunOptions:
    return options.replace(ablate=tuple(parse_ablation(text) for text in texts))


PRECISION_VALUES = PRECISIONS  # RunOptions.precision (issue 23)


def precision_choices(_config: ModelConfig) -> tuple[Choice, ...]:
    return (Choice("stored", "As stored"), Choice("float32", "float32"))
