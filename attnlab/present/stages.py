"""The ordered list of stages a person steps through, derived from a Trace. Qt-free.

A Stage names what to show (its `kind` picks the panel) and where to find it in the Trace (`site` for
attention stages, `layer` prefix for add & norm and FFN, `side` for inputs); `stage_tensors` lists the trace
entries it shows and `shape_text` their live shapes. Every name is built through `attnlab.engine.names`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from attnlab.engine import mechanisms, names, option_rules
from attnlab.engine.options import RunOptions
from attnlab.present import disentangled, formulas, position_bias, relative_key, trained_scale, words
from attnlab.present.stage_types import (
    COLOUR_SCALES,
    COMPARE_MODES,
    FIXED_SCORE_RANGE,
    KV_CACHE,
    KV_CACHE_TITLE,
    MOE,
    MOE_TITLE,
    NORM_COMPARE,
    NORM_COMPARE_TITLE,
    OUTPUT,
    OUTPUT_BOX,
    POST_NORM,
    SCORE_KINDS,
    Stage,
    ViewState,
    output_key,
)

if TYPE_CHECKING:  # only a type hint here: importing the engine's trace pulls in torch (~1.3 s at start-up)
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.trace import Trace

__all__ = [  # Stage, ViewState and the kind names live in the leaf stage_types.py; importers may use either
    "COLOUR_SCALES",
    "COMPARE_MODES",
    "FIXED_SCORE_RANGE",
    "MOE",
    "MOE_TITLE",
    "NORM_COMPARE",
    "NORM_COMPARE_TITLE",
    "OUTPUT",
    "OUTPUT_BOX",
    "POST_NORM",
    "SCORE_KINDS",
    "Stage",
    "ViewState",
    "output_key",
    "stages_for",
]

# Attention steps in order: (kind, title). Each is one stage per attention site.
ATTENTION_STEPS = (
    ("qkv", "Q, K, V"),
    ("scores", "QKᵀ scores"),
    ("scaled", "÷ √dₖ"),
    ("scale_why", "why ÷ √dₖ?"),
    ("mask", "mask"),
    ("masked", "masked scores"),
    ("weights", "softmax → weights"),
    ("heads", "all heads"),
    ("lines", "token → token lines"),
    ("context", "weights · V"),
    ("concat", "concat heads"),
    ("attn_out", "× W_O"),
)


INPUT_STEPS = (
    ("tokens", "tokenization"),
    ("embed", "embedding"),
    ("pos", "+ positional encoding"),
    ("input", "embedding + position"),
)

# ALBERT / ELECTRA: after the (embed_dim-wide) layer input, the map to d_model
FACTORISED_STEP = (names.EMBED_PROJ, "× W_proj → d_model (factorised embedding)")

OUTPUT_STEPS = ((names.LOGITS, "output logits"), (names.PROBS, "softmax → next token"))
# ELECTRA's discriminator: one "replaced?" logit per token, not a vocabulary
REPLACED_STEPS = ((names.LOGITS, "replaced? logit z per token"), (names.PROBS, "σ(z) → P(replaced) per token"))
LENS_STEP = (names.LENS, "logit lens: prediction after each layer")  # after the output (engine/logit_lens.py)


def _attention_stages(trace: Trace, site: str, group: str, masked_self: bool) -> list[Stage]:
    kind_name = words.site_words(site, causal=masked_self)
    scale = trace.options.scale
    divisor = formulas.layer_divisor(trace.config, site)  # GPT-2's scale_attn_by_inverse_layer_idx
    titles = {
        k: (t if k != "scaled" or (scale and divisor is None) else formulas.scaled_title(scale, divisor))
        for k, t in ATTENTION_STEPS
    }
    titles = norm_steps(trace.config, titles, scale)  # ÷ √query_pre_attn_scalar
    titles = disentangled.with_terms(trace.config, titles, scale)  # DeBERTa: c2c, c2p, p2c before their sum
    titles = relative_key.with_terms(trace.config, titles)  # BERT relative_key: Q·R, K·R before the score
    steps = position_bias.with_bias_steps(trace, site, list(titles.items()))  # ALiBi: bias, scaled + bias
    steps = mechanism_steps(trace.config, scale, site, steps)  # each mechanism's other stages (QK-norm, soft-cap)
    steps = trained_scale.retitled(trace.config, steps)  # T5: trained without ÷√dₖ
    if masked_self:  # a decoder's self-attention: what generation caches of it, after Q, K, V
        at = next((i + 1 for i, (k, _t) in enumerate(steps) if k == "qkv"), 0)
        steps = [*steps[:at], (KV_CACHE, KV_CACHE_TITLE), *steps[at:]]
    return [Stage(names.site_entry(site, k), k, f"{kind_name} · {t}", group, site=site) for k, t in steps]


def _addnorm(trace: Trace, layer: str, n: int, group: str) -> list[Stage]:
    """Add & norm n of `layer` (its title follows the residual toggle and the norm kind), then LayerNorm vs
    BatchNorm on the same activations; a sandwich's norm on the sub-layer's output after them (Gemma 2)."""
    residual = trace.options.residual
    title = formulas.addnorm_title(trace.config, residual, n)
    key = names.norm(layer, n)
    post = (
        [
            Stage(
                names.post_norm(layer, n),
                POST_NORM,
                f"{formulas.norm_word(trace.config)} on the output {n}",
                group,
                layer=layer,
                norm=n,
            )
        ]
        if trace.config.sublayer_norm == "sandwich" and names.stack_of(layer) == "dec"
        else []
    )
    return [
        Stage(key, "addnorm", title, group, layer=layer, norm=n),
        Stage(f"{key}.{NORM_COMPARE}", NORM_COMPARE, f"{NORM_COMPARE_TITLE} {n}", group, layer=layer, norm=n),
        *post,
    ]


def norm_steps(config: ModelConfig, titles: dict[str, str], scale: bool) -> dict[str, str]:
    """A site's step titles with the ÷ √query_pre_attn_scalar title."""
    if scale and config.query_scale_dim:
        titles["scaled"] = formulas.scaled_title(scale, None, config)
    return titles


def mechanism_steps(config: ModelConfig, scale: bool, site: str, steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The site's (kind, title) steps with every stage an attention mechanism adds (engine/mechanisms.py
    site_stages: kind, title, the stage it goes before) that is not there yet, in the registry's order."""
    for stage in mechanisms.site_stages(config, scale, site):
        kinds = [kind for kind, _ in steps]
        if stage.kind not in kinds:
            steps.insert(kinds.index(stage.before), (stage.kind, stage.title))
    return steps


def _ffn(trace: Trace, layer: str, group: str) -> Stage:
    if names.ffn_entry(layer, "router_probs") in trace:  # a mixture of experts: the router is what is new
        return Stage(names.ffn(layer), MOE, MOE_TITLE, group, layer=layer)
    return Stage(names.ffn(layer), "ffn", words.word("ffn"), group, layer=layer)


def _inputs(trace: Trace, side: str) -> list[Stage]:
    """The input steps. The positional step stays while the toggle switches positions off (its panel says so):
    the stage numbers and the stage shown stay put across the toggle."""
    table = names.side_entry(side, "pos") in trace or trace.config.adds_position_table
    steps = [s for s in INPUT_STEPS if s[0] != "pos" or table]
    if names.side_entry(side, names.EMBED_PROJ) in trace:
        steps.append(FACTORISED_STEP)
    return [Stage(names.side_entry(side, k), k, t, words.word(side), side=side) for k, t in steps]


def _layers(trace: Trace, stack: str) -> list[str]:
    """'enc.0', 'enc.1', … for every layer of `stack` this trace recorded."""
    found, index = [], 0
    while names.site_entry(names.site(names.layer(stack, index), "self"), "weights") in trace:
        found.append(names.layer(stack, index))
        index += 1
    return found


def _layer_stages(trace: Trace, layer: str) -> list[Stage]:
    """One layer in computation order: self-attention, add & norm, [cross-attention, add & norm,] FFN, add & norm."""
    group = words.layer_words(layer)
    stack = names.stack_of(layer)
    cross = names.site(layer, "cross")
    has_cross = names.site_entry(cross, "weights") in trace
    stages = _attention_stages(trace, names.site(layer, "self"), group, stack == "dec")
    stages += _addnorm(trace, layer, 1, group)
    if has_cross:
        stages += _attention_stages(trace, cross, group, False)
        stages += _addnorm(trace, layer, 2, group)
    return stages + [_ffn(trace, layer, group), *_addnorm(trace, layer, names.sublayer_count(stack, has_cross), group)]


_STAGES_CACHE: dict[tuple, list[Stage]] = {}
_STAGES_CACHE_SIZE = 16


def stages_for(trace: Trace) -> list[Stage]:
    """Every stage of this run in computation order.

    The list depends only on which entries the trace holds, its config, and the switches that rename stages
    (√dₖ and residual: `renames_stages` in the option table), so a toggle that changes none of them gets the
    same list object back: the navigator then sees at once that nothing changed. Stages are frozen; do not
    modify the list.

    The app builds it once per trace, on the session's worker thread (`warm_up` returns it with the trace):
    the GUI thread only reads it, so the cache needs no lock."""
    key = (tuple(trace), trace.config, *option_rules.stage_key(trace.options))
    cached = _STAGES_CACHE.get(key)
    if cached is None:
        if len(_STAGES_CACHE) >= _STAGES_CACHE_SIZE:
            _STAGES_CACHE.pop(next(iter(_STAGES_CACHE)))  # the oldest
        cached = _STAGES_CACHE[key] = _build_stages(trace)
    return cached


def _build_stages(trace: Trace) -> list[Stage]:
    stages: list[Stage] = []
    for side in names.SIDES:
        if names.side_entry(side, "tokens") in trace:
            stages += _inputs(trace, side)
            for layer in _layers(trace, names.side_stack(side)):
                stages += _layer_stages(trace, layer)
    steps = REPLACED_STEPS if trace.config.replaced_head else OUTPUT_STEPS
    stages += [Stage(output_key(k), k, t, words.word("output")) for k, t in steps]
    if names.LENS_PROBS in trace:  # the logit lens: one picture of every layer's guess, after the real one
        stages.append(Stage(output_key(LENS_STEP[0]), LENS_STEP[0], LENS_STEP[1], words.word("output")))
    return stages


class _Outline(set):
    """The entry names a run of a config records, as far as the stage list looks at them (no tensors)."""

    def __init__(self, entries: list[str], config: ModelConfig):
        super().__init__(entries)
        self.config, self.options = config, RunOptions().resolved(config)  # as trained: the keys every run has


def stage_keys_for_config(config: ModelConfig) -> list[str]:
    """The stage keys every run of a model with `config` has, known before the model is built or run (the
    command line checks `--stage` against them before loading the weights)."""
    return [stage.key for stage in stages_for_config(config)]


def stages_for_config(config: ModelConfig) -> list[Stage]:
    """The stages every recorded run of a model with `config` has, as trained (default options). The same list
    `stages_for` makes from a trace: it is built from an outline of the entries such a trace holds."""
    entries: list[str] = []
    for side in names.SIDES:
        stack = names.side_stack(side)
        if not (config.has_encoder if stack == "enc" else config.has_decoder):
            continue
        entries.append(names.side_entry(side, "tokens"))
        if config.adds_position_table:
            entries.append(names.side_entry(side, "pos"))
        if config.embed_dim:
            entries.append(names.side_entry(side, names.EMBED_PROJ))
        count = config.n_encoder_layers if stack == "enc" else config.n_decoder_layers
        for index in range(count):
            layer = names.layer(stack, index)
            entries.append(names.site_entry(names.site(layer, "self"), "weights"))
            if config.n_experts:  # a mixture of experts records its router (engine/moe.py)
                entries.append(names.ffn_entry(layer, "router_probs"))
            if stack == "dec" and config.has_encoder:
                entries.append(names.site_entry(names.site(layer, "cross"), "weights"))
    if names.has_lens(config.arch):  # a recorded run of a decoder LM has the logit lens (engine/logit_lens.py)
        entries.append(names.LENS_PROBS)
    return _build_stages(_Outline(entries, config))  # type: ignore[arg-type]


def pick_stage(stages: list[Stage], key: str | None) -> Stage | None:
    """The stage called `key`; else the first of its group ("Encoder layer 2"); else the first stage."""
    if not stages:
        return None
    by_key = {s.key: s for s in stages}
    if key in by_key:
        return by_key[key]
    if key:
        group = _group_prefix(key)
        for s in stages:
            if _group_prefix(s.key) == group:
                return s
    return stages[0]


def _group_prefix(key: str) -> str:
    return names.layer_of(key) or key.split(".", 1)[0]


# The site steps each attention stage kind shows.
_SITE_TENSORS = {
    "qkv": ("q", "k", "v"),
    KV_CACHE: ("k", "v"),
    "qk_norm": names.QK_NORM_STEPS,
    "capped": ("capped",),
    **{term: (term,) for term in names.DISENTANGLED_TERMS},  # DeBERTa's score terms
    **{term: (term,) for term in names.RELATIVE_KEY_TERMS},  # BERT relative_key's score terms
    "scores": ("scores",),
    "scaled": ("scaled",),
    "scale_why": ("scores", "scaled"),
    "mask": ("mask",),
    "bias": ("bias",),
    "biased": ("biased",),
    "masked": ("masked",),
    "weights": ("weights",),
    "heads": ("weights",),
    "lines": ("weights",),
    "context": ("context",),
    "concat": ("concat",),
    "attn_out": ("out",),
}


def stage_tensors(stage: Stage) -> list[str]:
    """The trace entries a stage shows, e.g. ['enc.0.self.q', 'enc.0.self.k', 'enc.0.self.v']."""
    if stage.site:
        return [names.site_entry(stage.site, step) for step in _SITE_TENSORS.get(stage.kind, ())]
    if stage.side:
        return [names.side_entry(stage.side, "ids" if stage.kind == "tokens" else stage.kind)]
    if stage.kind == NORM_COMPARE and stage.layer and stage.norm:
        return [names.norm_entry(names.norm(stage.layer, stage.norm), "in")]
    if stage.kind == "addnorm" and stage.layer and stage.norm:
        return [names.resid(stage.layer, stage.norm), names.norm_entry(names.norm(stage.layer, stage.norm), "out")]
    if stage.kind == POST_NORM and stage.layer and stage.norm:
        return [names.norm_entry(names.post_norm(stage.layer, stage.norm), "out"), names.resid(stage.layer, stage.norm)]
    if stage.kind == "ffn" and stage.layer:
        return [names.ffn_entry(stage.layer, "hidden"), names.ffn_entry(stage.layer, "out")]
    if stage.kind == names.LENS:
        return [names.LENS_PROBS, names.LENS_IDS]
    if stage.kind == MOE and stage.layer:
        return [names.ffn_entry(stage.layer, p) for p in ("router_probs", "chosen", "out")]
    return [stage.kind]  # the output steps: "logits", "probs"


def warm_entries(stage: Stage) -> list[str]:
    """What the panel of `stage` reads when a trace arrives: its tensors, and for add & norm the LayerNorm's
    statistics. The output steps are left out (their [T, V] tensors are read one row at a time)."""
    if stage.kind in (names.LOGITS, names.PROBS):
        return []
    wanted = stage_tensors(stage)
    if stage.kind == "addnorm" and stage.layer and stage.norm:
        wanted += [names.norm_entry(names.norm(stage.layer, stage.norm), stat) for stat in ("in", "mean", "var")]
    return wanted


def slow_to_show(trace: Trace, stage: Stage) -> list[str]:
    """What the panel of `stage` reads that a lean run (engine/replay.py) must recompute first: the layer
    entries to bring to the host on the worker before the panel is shown (empty: show it at once)."""
    return trace.recomputed_inputs(name for name in warm_entries(stage) if name in trace)


OUTPUT_WARM_LIMIT = 4_000_000  # elements of the [T, V] output: up to 16 MB of float32 is warmed whole


def output_fits(trace: Trace) -> bool:
    """Whether the [T, V] logits are small enough to compute and copy whole (the classroom models' are a few
    hundred kB; a large vocabulary times a long input is not)."""
    shape = getattr(trace.entries.get(names.LOGITS), "shape", None)
    return shape is not None and math.prod(shape) <= OUTPUT_WARM_LIMIT


def warm_up(trace: Trace, stage_key: str | None) -> list[Stage]:
    """The trace's stage list (built here, once per trace), after computing (derived entries) and bringing
    to the host the entries the panel of `stage_key` reads first.

    Called on the session's worker thread right after a run, so the GUI thread only reads cached copies and
    the list. The output steps' [T, V] table is warmed whole when it is small: the bars and the shapes line
    read it, and its softmax on the GUI thread took 20–100 ms there on a busy machine."""
    stages = stages_for(trace)
    stage = pick_stage(stages, stage_key)
    if stage is not None:
        warm_stage(trace, stage)
    return stages


def warm_stage(trace: Trace, stage: Stage) -> None:
    """Compute (derived and recomputed entries) and bring to the host what the panel of `stage` reads first."""
    wanted = warm_entries(stage)
    if stage.kind in (names.LOGITS, names.PROBS) and output_fits(trace):
        wanted = [stage.kind]
    wanted = [name for name in wanted if name in trace]
    from attnlab.engine import derived_blocks  # torch: here, on the worker, never before the window's first paint

    small = [name for name in wanted if not derived_blocks.is_big_map(trace, name)]  # a long map: read by head
    trace.fetch(small + [name for name in trace.recomputed_inputs(wanted) if name not in small])


def shape_text(trace: Trace, stage: Stage) -> str:
    """'enc.0.self.q [4 × 7 × 32] · …': the live shapes of what the stage shows."""
    from attnlab.present.views.long_map import long_shape  # long maps: the shape without reading them

    parts = []
    for name in stage_tensors(stage):
        value = long_shape(trace, name) or trace.get(name)
        shape = value if isinstance(value, tuple) else getattr(value, "shape", None)
        if shape is not None:
            parts.append(f"{name} [{' × '.join(str(n) for n in shape)}]")
    return " · ".join(parts)
