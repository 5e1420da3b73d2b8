"""What the last recorded run left behind so that a toggle re-runs only from the first layer it changes.

A mask toggle (a hand-made mask on one site, a causal switch for one kind of site) changes nothing before the
first site whose mask differs. The run that follows it starts at that site's layer: the trace's entries before
that layer are the previous run's (the same tensors), the layer's input is the one kept here, and everything
from there on is computed again. The result equals a full run bit for bit (tests/engine/test_trace_resume.py).

`LayerInputs` (run_inputs.py) holds the batched tensor entering each layer and the encoder's output; they are the same
storage as trace entries (`{side}.input`, the previous layer's `out`, `enc.out`), so keeping them costs no
memory while the trace lives. Qt-free.
"""

from __future__ import annotations

from collections import OrderedDict

from attnlab.engine import names, option_rules
from attnlab.engine.config import ModelConfig
from attnlab.engine.option_spec import FROM_SITE, NOTHING, OUTPUT
from attnlab.engine.options import RunOptions


def sites_in_run_order(config: ModelConfig) -> list[str]:
    """Every attention site in the order a forward pass reaches it."""
    out = []
    if config.has_encoder:
        out += [names.site(names.layer("enc", i), "self") for i in range(config.n_encoder_layers)]
    if config.has_decoder:
        for i in range(config.n_decoder_layers):
            layer_name = names.layer("dec", i)
            out.append(names.site(layer_name, "self"))
            if config.has_encoder:
                out.append(names.site(layer_name, "cross"))
    return out


def first_changed_layer(config: ModelConfig, before: RunOptions, after: RunOptions) -> tuple[str, int] | None:
    """(stack, layer) of the first site changed between two options that differ only in fields whose effect
    starts at a known site (FROM_SITE in the option table: the masks) and fields that invalidate at most the
    output; None when some other field differs or no site changed."""
    changed = before.changed_fields(after) - option_rules.fields_invalidating(NOTHING, OUTPUT)
    if not changed or not changed <= option_rules.fields_invalidating(FROM_SITE):
        return None
    for site_name in sites_in_run_order(config):
        if option_rules.site_changed(before, after, site_name, changed, config):
            stack, index, _kind = names.split_site(site_name)
            return stack, index
    return None


def entries_before(entries: OrderedDict, stack: str, layer: int) -> OrderedDict:
    """The entries a run resumed at (stack, layer) keeps: every one recorded before that layer's first."""
    prefix = names.layer(stack, layer) + "."
    kept: OrderedDict = OrderedDict()
    for name, value in entries.items():
        if name.startswith(prefix):
            break
        kept[name] = value
    return kept
