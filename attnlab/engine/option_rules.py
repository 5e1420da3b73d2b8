"""Rules generated from the option table (engine/option_specs.SPECS, read at each call, so a spec added to the
table is honoured at once): what a change invalidates, the stage list's key, the reasons a run departs from
training, and the command-line flags that ask for options. Qt-free.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator

from attnlab.engine import option_specs
from attnlab.engine.config import ModelConfig
from attnlab.engine.option_spec import NOTHING, OUTPUT, CliFlag, Control, LessonKey, OptionSpec, RunFacts
from attnlab.engine.options import RunOptions


def specs() -> tuple[OptionSpec, ...]:
    """The option table as it stands now."""
    return option_specs.SPECS


def spec_of(field: str) -> OptionSpec:
    return next(s for s in specs() if s.field == field)


def fields_invalidating(*classes: str) -> frozenset[str]:
    """The fields whose change invalidates what one of `classes` (option_spec.NOTHING, OUTPUT, ...) says."""
    return frozenset(s.field for s in specs() if s.invalidates in classes)


def reuse_key(options: RunOptions) -> RunOptions:
    """`options` with every field whose change leaves the last run's entries valid (nothing, or only the
    output softmax, derived on read) put back to its default: two runs with the same key share their entries."""
    defaults = RunOptions()
    return options.replace(**{f: getattr(defaults, f) for f in fields_invalidating(NOTHING, OUTPUT)})


def site_changed(
    before: RunOptions, after: RunOptions, site: str, fields: frozenset[str], config: ModelConfig | None = None
) -> bool:
    """Whether a change of `fields` (all of them FROM_SITE fields) changes attention site `site` (of `config`'s
    model: a spec whose reach depends on the model asks it)."""
    for spec in specs():
        if spec.field not in fields:
            continue
        if spec.site_changed is not None and spec.site_changed(before, after, site):
            return True
        if (
            spec.site_changed_in is not None
            and config is not None
            and spec.site_changed_in(config, before, after, site)
        ):
            return True
    return False


def stage_key(options: RunOptions) -> tuple:
    """The values of the fields that rename stages (present/stages.py caches a stage list under them)."""
    return tuple(getattr(options, s.field) for s in specs() if s.renames_stages)


def departures(
    config: ModelConfig,
    options: RunOptions,
    peak_logit: Callable[[], float | None],
    pads: Callable[[], int] = lambda: 0,
) -> list[str]:
    """Why a run with `options` is not the trained model's, in the banner's words (empty: it is), one spec
    after the other in the table's order. `peak_logit()` gives the run's largest |logit| and `pads()` how many
    <pad> positions its inputs hold, when a reason needs them."""
    return [
        reason
        for reasons in departures_by_field(config, options, RunFacts(peak_logit, pads)).values()
        for reason in reasons
    ]


def departures_by_field(config: ModelConfig, options: RunOptions, run: RunFacts) -> dict[str, list[str]]:
    """{field: its reasons} for each spec whose value departs from training, in the table's order."""
    resolved = options.resolved(config)
    found = {s.field: s.departs(config, resolved, run) for s in specs() if s.departs is not None}
    return {field: reasons for field, reasons in found.items() if reasons}


def controls() -> Iterator[tuple[OptionSpec, Control]]:
    """Every control of the toggles panel with the spec of the field it sets, in the table's order."""
    for spec in specs():
        for control in spec.controls:
            yield spec, control


def lesson_keys() -> dict[str, tuple[OptionSpec, LessonKey]]:
    """The keys a lesson's `toggles` table may hold, with the spec each sets."""
    return {s.lesson.key: (s, s.lesson) for s in specs() if s.lesson is not None}


# ---- the command line ------------------------------------------------------------------------------------------
def _flags() -> Iterator[tuple[str, CliFlag]]:
    for spec in specs():
        for flag in spec.cli:
            yield flag.flag.lstrip("-").replace("-", "_"), flag


def add_option_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """One flag per CliFlag of the table (`attnlab trace --no-scale ...`)."""
    for _dest, flag in _flags():
        parser.add_argument(flag.flag, **dict(flag.arguments))


def options_from_args(args: argparse.Namespace, base: RunOptions | None = None) -> RunOptions:
    """The RunOptions the flags ask for; ValueError naming the flag for a value written in a form it cannot
    read (RunOptions.problems checks the values against a model)."""
    options = base or RunOptions()
    for dest, flag in _flags():
        try:
            options = flag.apply(options, getattr(args, dest))
        except ValueError as e:
            raise ValueError(f"{flag.flag}: {e}") from None
    return options
