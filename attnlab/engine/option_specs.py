"""The option table: one OptionSpec per RunOptions field, the only place a toggle is described (Qt-free).

Everything that shows, reads or reuses an option is generated from SPECS: the toggles panel's controls
(present/option_controls.py, ui/controls/control_rows.py), the `attnlab trace` flags and the run cache's reuse rules
(engine/option_rules.py), the lesson toggles (present/lessons.py), the stage list's cache key
(present/stages.py) and the banner's reasons (present/facts.py). engine/option_spec.py says what each part of
a spec means; engine/option_parts.py holds the functions the table is made of. The table's order is the
order of the controls within each group of the panel, of the flags and of the banner's reasons.
"""

from __future__ import annotations

from attnlab.engine import adapter_option
from attnlab.engine import option_parts as part
from attnlab.engine.option_parts import MASKS, OUTPUT_GROUP, PARTS, SHAPE
from attnlab.engine.option_spec import FROM_SITE, OUTPUT, CliFlag, Control, LessonKey, OptionSpec
from attnlab.engine.option_specs_sampling import SAMPLING_SPECS

NORM = OptionSpec(
    "norm",
    controls=(
        Control(
            "norm",
            "normCombo",
            "combo",
            SHAPE,
            "LayerNorm",
            "Where LayerNorm sits around each sub-layer",
            tooltip_for=part.norm_tip,
            choices=part.norm_choices,
        ),
    ),
    cli=(
        CliFlag(
            "--norm",
            {
                "choices": ("pre", "post"),
                "default": None,
                "help": "re-wire the LayerNorms (default: the placement the model was trained with); for a "
                "bare nn.Transformer state dict: its placement",
            },
            part.unless_none("norm"),
        ),
    ),
    lesson=LessonKey(
        "norm",
        (str,),
        lambda v: (
            None
            if v in dict(part.NORM_CHOICES)
            else f"toggle 'norm' must be one of {', '.join(dict(part.NORM_CHOICES))}, not {v!r}"
        ),
    ),
    departs=part.norm_departs,
)

N_HEADS = OptionSpec(
    "n_heads",
    controls=(
        Control(
            "heads",
            "headsCombo",
            "combo",
            SHAPE,
            "Heads",
            "Re-split the same W_Q, W_K, W_V, W_O into this many heads",
            tooltip_for=part.heads_tip,
            choices=part.head_choice_items,
            shown=lambda o, c: o.effective_heads(c),
            written=lambda o, c, n: o.replace(n_heads=None if n == c.n_heads else n),
        ),
    ),
    cli=(
        CliFlag(
            "--heads",
            {
                "type": int,
                "default": None,
                "help": "re-split attention into H heads; for a bare nn.Transformer state dict: its head count",
            },
            part.unless_none("n_heads"),
        ),
    ),
    lesson=LessonKey("n_heads", (int,), part.at_least("n_heads", 1)),
    departs=part.heads_departs,
)

FINAL_NORM = OptionSpec(
    "final_norm",
    controls=(
        part.check(
            "final_norm",
            "finalNormCheck",
            SHAPE,
            "Final LayerNorm",
            "A LayerNorm after each stack's last layer: pre-norm models need one (a post-norm model switched "
            "to pre-norm gets a parameter-free one, γ = 1, β = 0)",
            unavailable=part.final_norm_unavailable,
            shown=lambda o, c: part.final_norm_on(c, o),
            written=lambda o, c, on: o.replace(final_norm=None if on == c.final_norm else on),
            reads=("norm",),
        ),
    ),
    departs=part.final_norm_departs,
)

# The ablation row depends on the stage and head shown, not only on the options: ui/controls/controls_study.py draws it.
ABLATE = OptionSpec(
    "ablate",
    cli=(
        CliFlag(
            "--ablate",
            {
                "action": "append",
                "default": [],
                "metavar": "SITE:HEAD[:MODE]",
                "help": "ablate a head (0-based) at a site, MODE zero (default) or mean, like enc.0.self:2:zero; "
                "repeat for more heads",
            },
            part.parsed_ablations,
        ),
    ),
    departs=part.ablation_departs,
)

# Activation patching (issue 37): run A's values in run B. No control: a cell dragged from A onto B, or the
# context menu, sets it (ui/, through present/patching.py); the run resumes at the first patched layer.
PATCH = OptionSpec(
    "patch",
    invalidates=FROM_SITE,
    site_changed=part.patch_changed,
    departs=part.patch_departs,
)

CAUSAL = OptionSpec(
    "causal",
    invalidates=FROM_SITE,
    site_changed=lambda before, after, site: before.is_causal(site) != after.is_causal(site),
    controls=(
        part.causal_control("dec", "causal", "causalCheck", "Causal mask (decoder)"),
        part.causal_control("enc", "enc_causal", "encCausalCheck", "Causal mask (encoder)"),
    ),
    cli=(
        CliFlag(
            "--no-causal-mask",
            {"action": "store_true", "help": "let the decoder look ahead"},
            lambda o, given: o.with_causal("dec.self", False) if given else o,
        ),
    ),
    lesson=LessonKey("causal", (dict,), part.causal_problem, part.with_causal_table, saved=dict),
    departs=part.causal_departs,
)

PADDING_MASK = OptionSpec(
    "padding_mask",
    controls=(part.check("padding", "paddingCheck", MASKS, "Padding mask", "Block attention to <pad> tokens"),),
    lesson=part.bool_key("padding_mask"),
    departs=part.padding_departs,
)

PAD_TO = OptionSpec(
    "pad_to",
    controls=(
        Control(
            "pad_to",
            "padToSpin",
            "spin",
            MASKS,
            "Pad to",
            "Pad the inputs with <pad> up to this many tokens",
            value_range=lambda c: (0, c.max_len),
            settings={"minimum": 0, "maximum": 256, "specialValueText": "no padding"},
        ),
    ),
    lesson=LessonKey("pad_to", (int,), part.at_least("pad_to", 0)),
    as_trained="padding only appends <pad> tokens; with the padding mask on no real token sees them, so the "
    "real tokens' numbers are the trained model's (the padding mask's spec says when it is off)",
)

CUSTOM_MASKS = OptionSpec(
    "custom_masks",
    invalidates=FROM_SITE,
    site_changed=lambda before, after, site: before.custom_cells(site) != after.custom_cells(site),
    controls=(
        Control(
            "clear_mask",
            "clearMaskButton",
            "clear",
            MASKS,
            None,
            "Unblock every cell you clicked on a mask panel",
            text="Clear custom mask",
            shown=part.masked_cells_text,
            unavailable=lambda _c, o: None if o.custom_masks else "No cell is blocked by hand",
            written=lambda o, _c, _v: o.replace(custom_masks=()),
            settings={"info": "mask_info"},
        ),
    ),
    departs=part.custom_mask_departs,
)

SCALE = OptionSpec(
    "scale",
    controls=(
        part.check(
            "scale",
            "scaleCheck",
            PARTS,
            "Divide scores by √dₖ",
            "Scale QKᵀ by 1/√dₖ before the softmax",
            unavailable=lambda c, _o: None if c.trained_scale else part.UNSCALED_TIP,
            shown=lambda o, c: o.scale and c.trained_scale,
        ),
    ),
    cli=(
        CliFlag(
            "--no-scale", {"action": "store_true", "help": "skip the division by sqrt(d_k)"}, part.switch_off("scale")
        ),
    ),
    lesson=part.bool_key("scale"),
    renames_stages=True,
    departs=part.scale_departs,
)

POSITIONAL = OptionSpec(
    "positional",
    controls=(
        part.check(
            "positional",
            "positionalCheck",
            PARTS,
            "Positional encoding",
            "Add the position to each token",
            text_for=lambda c: part.POSITIONAL_TEXTS.get(c.positions_kind, "Positional encoding"),
            tooltip_for=lambda c: part.POSITIONAL_TIPS.get(c.positions_kind, part.POSITIONAL_TIPS["sinusoidal"]),
            unavailable=lambda c, _o: part.POSITIONAL_TIPS["none"] if c.positions_kind == "none" else None,
            shown=lambda o, c: o.positional and c.positions_kind != "none",
        ),
    ),
    cli=(
        CliFlag(
            "--no-pos",
            {"action": "store_true", "help": "leave out the positional encoding"},
            part.switch_off("positional"),
        ),
    ),
    lesson=part.bool_key("positional"),
    departs=part.positional_departs,
)

RESIDUAL = OptionSpec(
    "residual",
    controls=(
        part.check("residual", "residualCheck", PARTS, "Residual connections", "The x + sublayer(x) skip paths"),
    ),
    cli=(
        CliFlag(
            "--no-residual",
            {"action": "store_true", "help": "remove the residual connections"},
            part.switch_off("residual"),
        ),
    ),
    lesson=part.bool_key("residual"),
    renames_stages=True,
    departs=part.off_reason(
        "residual",
        "residual connections are off: every sub-layer replaces its input instead of adding a correction to it",
    ),
)

PROJECTIONS = OptionSpec(
    "projections",
    controls=(
        part.check(
            "projections",
            "projectionsCheck",
            PARTS,
            "Projections W_Q, W_K, W_V, W_O",
            "Off: plain dot-product attention, Q = K = V = x (cross-attention: K = V = the encoder output), and no W_O",
            unavailable=part.projections_unavailable,
        ),
    ),
    cli=(
        CliFlag(
            "--no-projections",
            {"action": "store_true", "help": "plain dot-product attention: Q = K = V = x, no W_Q, W_K, W_V, W_O"},
            part.switch_off("projections"),
        ),
    ),
    departs=part.off_reason(
        "projections",
        "the projections W_Q, W_K, W_V, W_O are off: attention compares and mixes the raw vectors, "
        "which the trained layers never saw",
    ),
)

TEMPERATURE = OptionSpec(
    "temperature",
    invalidates=OUTPUT,
    controls=(
        Control(
            "temperature",
            "temperatureSpin",
            "slider",
            OUTPUT_GROUP,
            "Temperature",
            "softmax(logits / T): low T sharpens, high T flattens",
            written=lambda o, _c, t: o.replace(temperature=round(t, 2)),
            settings={
                "minimum": 0.1,
                "maximum": 5.0,
                "singleStep": 0.1,
                "decimals": 2,
                "value": 1.0,
                "scale": 100,
                "slider": "temperatureSlider",
            },
        ),
    ),
    cli=(
        CliFlag(
            "--temperature",
            {
                "type": float,
                "default": None,
                "help": "softmax temperature of the output (default: generation_config.json's, else 1)",
            },
            part.unless_none("temperature"),
        ),
    ),
    lesson=LessonKey(
        "temperature",
        (float, int),
        lambda t: None if 0 < t <= 100 else "toggle 'temperature' must be above 0 and at most 100",
        lambda o, t: o.replace(temperature=float(t)),
    ),
    as_trained="a decoding choice: every tensor up to the logits is the trained model's, and the output stage "
    "names the temperature its probabilities use",
)

DEVICE = OptionSpec(
    "device",
    controls=(
        Control(
            "device",
            "deviceCombo",
            "combo",
            OUTPUT_GROUP,
            "Device",
            "Where the model runs",
            choices=part.device_choices,
            shown=part.device_shown,
        ),
    ),
    cli=(
        CliFlag("--device", {"choices": ("auto", "cpu", "cuda"), "default": "auto"}, lambda o, d: o.replace(device=d)),
    ),
    as_trained="where the run happens: the same computation on the CPU or a GPU",
)

# precision (issue 23, weights as stored): the stored dtype (bf16 stays bf16) or float32 for the run
PRECISION = OptionSpec(
    "precision",
    controls=(
        Control(
            "precision",
            "precisionCombo",
            "combo",
            OUTPUT_GROUP,
            "Precision",
            "Run in the dtype the weights are stored in (bf16, fp16, fp32), or widen them to float32",
            choices=part.precision_choices,
        ),
    ),
    cli=(
        CliFlag(
            "--dtype",
            {
                "choices": part.PRECISION_VALUES,
                "default": "stored",
                "help": "run in the weights' stored dtype (bf16 stays bf16) or widen them to float32",
            },
            lambda o, d: o.replace(precision=d),
        ),
    ),
    lesson=LessonKey(
        "precision",
        (str,),
        lambda v: (
            None
            if v in part.PRECISION_VALUES
            else f"toggle 'precision' must be one of {', '.join(part.PRECISION_VALUES)}, not {v!r}"
        ),
    ),
    as_trained="the stored dtype is the weights as trained, and float32 only widens them (no rounding is added)",
)

# adapter_strength (issue 35): W + s·ΔW for a LoRA adapter's weights; a change re-runs from the first adapted layer
ADAPTER_STRENGTH = OptionSpec(
    "adapter_strength",
    invalidates=FROM_SITE,
    site_changed_in=adapter_option.site_changed_in,
    controls=(adapter_option.CONTROL,),
    cli=(adapter_option.FLAG,),
    lesson=adapter_option.LESSON,
    departs=adapter_option.departs,
)

# record: the API's fast path (LiveModel.trace(options=RunOptions(record=False))); no control, flag or key.
RECORD = OptionSpec("record", as_trained="what the trace keeps, not what the model computes")

SPECS: tuple[OptionSpec, ...] = (
    NORM,
    N_HEADS,
    FINAL_NORM,
    ABLATE,
    PATCH,
    CAUSAL,
    PADDING_MASK,
    PAD_TO,
    CUSTOM_MASKS,
    SCALE,
    POSITIONAL,
    RESIDUAL,
    PROJECTIONS,
    TEMPERATURE,
    *SAMPLING_SPECS,  # sample, top_k, top_p, seed (issue 35)
    DEVICE,
    PRECISION,
    ADAPTER_STRENGTH,
    RECORD,
)
