"""The option table's sampling rows (issue 35): draw the next token or take the argmax, top-k, top-p and the
seed (engine/sampling.py). Each changes only how the next token is chosen from the logits, so a change reuses
the last run (`invalidates=OUTPUT`, like the temperature) and never departs from training. Qt-free."""

from __future__ import annotations

from attnlab.engine import option_parts as part
from attnlab.engine.option_parts import OUTPUT_GROUP
from attnlab.engine.option_spec import OUTPUT, CliFlag, Control, LessonKey, OptionSpec
from attnlab.engine.sampling_settings import MAX_SEED

DECODING = "a decoding choice: every tensor up to the logits is the trained model's; it only changes which next "
MAX_SEED_SHOWN = 2**31 - 1  # what the panel's spin box holds; the API and the CLI take up to MAX_SEED


SAMPLE = OptionSpec(
    "sample",
    invalidates=OUTPUT,
    controls=(
        Control(
            "sample",
            "sampleCheck",
            "check",
            OUTPUT_GROUP,
            None,
            "Draw the next token from the probabilities after the top-k / top-p cut (with the seed) instead of "
            "taking the most probable one",
            text="Sample the next token",
        ),
    ),
    cli=(
        CliFlag(
            "--sample",
            {
                "action": "store_true",
                "default": None,
                "help": "draw each next token (with --top-k, --top-p, --seed) instead of the most probable one "
                "(default: the model folder's generation_config.json do_sample, else off)",
            },
            part.unless_none("sample"),
        ),
    ),
    lesson=LessonKey("sample", (bool,)),
    as_trained=DECODING + "token is taken",
)

TOP_K = OptionSpec(
    "top_k",
    invalidates=OUTPUT,
    controls=(
        Control(
            "top_k",
            "topKSpin",
            "spin",
            OUTPUT_GROUP,
            "Top-k",
            "Sampling keeps only the k most probable tokens (0: no top-k cut)",
            settings={"minimum": 0, "maximum": 100_000, "specialValueText": "off"},
        ),
    ),
    cli=(
        CliFlag(
            "--top-k",
            {"type": int, "default": None, "help": "keep the k most probable tokens when sampling (0: no cut)"},
            part.unless_none("top_k"),
        ),
    ),
    lesson=LessonKey("top_k", (int,), part.at_least("top_k", 0)),
    as_trained=DECODING + "token is drawn",
)

TOP_P = OptionSpec(
    "top_p",
    invalidates=OUTPUT,
    controls=(
        Control(
            "top_p",
            "topPSpin",
            "slider",
            OUTPUT_GROUP,
            "Top-p",
            "Sampling keeps the fewest most probable tokens whose probabilities add up to p (1: no top-p cut)",
            written=lambda o, _c, p: o.replace(top_p=round(p, 2)),
            settings={
                "minimum": 0.01,
                "maximum": 1.0,
                "singleStep": 0.01,
                "decimals": 2,
                "value": 1.0,
                "scale": 100,
                "slider": "topPSlider",
            },
        ),
    ),
    cli=(
        CliFlag(
            "--top-p",
            {
                "type": float,
                "default": None,
                "help": "keep the most probable tokens up to this probability (1: no cut)",
            },
            part.unless_none("top_p"),
        ),
    ),
    lesson=LessonKey(
        "top_p",
        (float, int),
        lambda p: None if 0 < p <= 1 else "toggle 'top_p' must be above 0 and at most 1",
        lambda o, p: o.replace(top_p=float(p)),
    ),
    as_trained=DECODING + "token is drawn",
)

SEED = OptionSpec(
    "seed",
    invalidates=OUTPUT,
    controls=(
        Control(
            "seed",
            "seedSpin",
            "spin",
            OUTPUT_GROUP,
            "Seed",
            "The random seed of the draws: the same seed gives the same tokens on every run and machine",
            settings={"minimum": 0, "maximum": MAX_SEED_SHOWN},
        ),
    ),
    cli=(
        CliFlag(
            "--seed",
            {"type": int, "default": None, "help": f"the seed of the draws (0 to {MAX_SEED}; default 0)"},
            part.unless_none("seed"),
        ),
    ),
    lesson=LessonKey("seed", (int,), part.at_least("seed", 0)),
    as_trained=DECODING + "token is drawn",
)

SAMPLING_SPECS: tuple[OptionSpec, ...] = (SAMPLE, TOP_K, TOP_P, SEED)
