"""Every formula and explanation follows the model's config and the run's toggles (issue 11, item 1).

For each config × toggle set, the explanation of every stage contains the right formula fragment and none
of the wrong ones: a model with learned positions never shows the sinusoidal table, a GELU model never the
ReLU formula, an RMSNorm model never LayerNorm's mean, a run with scaling off never divides by √dₖ, a run
with the residual off never adds x."""

from __future__ import annotations

import re

import pytest

from attnlab.engine.options import RunOptions
from attnlab.present.explain import explanation_html
from attnlab.present.stages import stages_for

CONFIGS = {
    "post-sinusoidal-relu": ("encoder-decoder", dict(positional="sinusoidal", activation="relu", norm_first=False)),
    "pre-learned-gelu": (
        "decoder-only",
        dict(positional="learned", activation="gelu", norm_first=True, final_norm=True),
    ),
    "rotary-silu-rmsnorm-gated": (
        "decoder-only",
        dict(positional="rotary", activation="silu", norm="rmsnorm", ffn="gated", norm_first=True, final_norm=True),
    ),
    "encoder-learned-gelu-tanh": ("encoder-only", dict(positional="learned", activation="gelu_tanh")),
}
TOGGLES = {
    "as trained": {},
    "scaling off": {"scale": False},
    "residual off": {"residual": False},
    "positions off": {"positional": False},
    "norm flipped": {"norm": "flip"},
}
PE = {
    "pos": {"sinusoidal": "sin(pos", "learned": "W<sub>pos</sub>", "rotary": "rotated by the angle"},
    "input": {"sinusoidal": "+ PE[pos]", "learned": "+ P[pos", "rotary": "rotating Q and K"},
}
ACT = {
    "relu": "max(0, x W<sub>1</sub>",
    "gelu": "GELU(z) = z · Φ(z)",
    "gelu_tanh": "tanh(√(2/π)",
    "silu": "SiLU(z) = z · σ(z)",
}


def _formula(page: str) -> str:
    found = re.search(r"<p style='font-size:large; font-family:serif'>(.*?)</p>", page, re.S)
    return found.group(1) if found else ""


@pytest.fixture(scope="module", params=list(CONFIGS))
def model(request, tiny_model):
    arch, changes = CONFIGS[request.param]
    return tiny_model(arch, seed=7, **changes)


def _pages(model, toggles: dict) -> dict[str, str]:
    options = dict(toggles)
    if options.get("norm") == "flip":
        options["norm"] = "post" if model.config.norm_first else "pre"
    src = "the black cat sees the dog" if model.config.has_encoder else None
    tgt = "le chat noir" if model.config.has_decoder else None
    trace = model.trace(src, tgt, RunOptions(**options))
    return {stage.key: (stage, explanation_html(stage, trace)) for stage in stages_for(trace)}


@pytest.mark.parametrize("toggle", list(TOGGLES))
def test_every_stage_formula_follows_config_and_toggles(model, toggle):
    cfg, toggles = model.config, TOGGLES[toggle]
    scale, residual = toggles.get("scale", True), toggles.get("residual", True)
    positions = cfg.positional if toggles.get("positional", True) else "none"
    pre = cfg.norm_first != (toggles.get("norm") == "flip")
    kinds = set()
    for stage, page in _pages(model, toggles).values():
        formula, kinds = _formula(page), kinds | {stage.kind}
        if stage.kind in ("pos", "input"):
            for kind, fragment in PE[stage.kind].items():
                assert (fragment in page) == (kind == positions), (stage.key, kind, page)
            assert "sin(" not in page or positions == "sinusoidal"
        if stage.kind == "ffn":
            for act, fragment in ACT.items():
                assert (fragment in page) == (act == cfg.activation), (stage.key, act)
            assert ("W<sub>gate</sub>" in formula) == (cfg.ffn == "gated")
        if stage.kind == "addnorm":
            rms = cfg.norm == "rmsnorm"
            assert ("RMSNorm(x) = γ ⊙ x / √(mean(x²)" in formula) == rms and ("(x − μ)" in formula) != rms
            norm = "RMSNorm" if rms else "LN"
            block = (
                (f"x + F({norm}(x))" if pre else f"{norm}(x + F(x))")
                if residual
                else (f"F({norm}(x))" if pre else f"{norm}(F(x))")
            )
            assert block in formula and ("x + F" in formula) == residual, (formula, block)
            assert ("add &amp;" in page.split("</h3>")[0].lower()) == residual
        if stage.kind in ("masked", "weights", "lines"):
            assert ("/ √d<sub>k</sub>" in formula) == scale, (stage.key, formula)
        if stage.kind == "scaled":
            assert ("switched off" in page.split("</h3>")[0]) != scale
            assert ("switched off" in stage.title) != scale and ("/ √" not in stage.title or scale)
    assert {"ffn", "addnorm", "weights", "scaled"} <= kinds
