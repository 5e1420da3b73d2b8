"""What one RunOptions field is, said once: the types of the option table (engine/option_specs.py). Qt-free.

An OptionSpec describes one field for every reader: its controls in the toggles panel (label, tooltip, widget
kind, the values it offers for a given model and why it is unavailable there), its command-line flags, its
lesson key, what a change of it invalidates in the run cache, whether it changes the stage list's titles, and
why a value departs from how the model was trained. The readers are generated from the table: the controls
(present/option_controls.py, ui/controls/control_rows.py), the flags and the reuse rules (engine/option_rules.py), the
lesson toggles (present/lessons.py), the stage key (present/stages.py) and the banner (present/facts.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig
    from attnlab.engine.options import RunOptions

# What a change of the field makes stale in the last run (engine/live.py, engine/runcache.py):
NOTHING: Final = "nothing"  # no tensor: the last run is reused as it is
OUTPUT: Final = "output"  # only the output softmax (derived from the logits on read): the last run's entries are reused
FROM_SITE: Final = "from_site"  # everything from the first attention site whose mask it changes: the run resumes there
EVERYTHING: Final = "everything"  # every tensor: a full run
Invalidates = Literal["nothing", "output", "from_site", "everything"]

# The widget a control is drawn with (ui/controls/control_widgets.py builds each kind).
WidgetKind = Literal["check", "combo", "spin", "slider", "clear"]


@dataclass(frozen=True)
class Choice:
    value: Any
    text: str
    enabled: bool = True


def _same(options: RunOptions, config: ModelConfig, name: str) -> Any:
    return getattr(options, name)


@dataclass(frozen=True)
class Control:
    """One widget of the toggles panel that shows and sets a RunOptions field.

    `attr`: the panel attribute holding the widget (a "slider" also has `attr`_slider, a "clear" `attr`_info);
    `name`: its objectName (docs/ui.md lists them, tests find widgets by it); `label`: the form label (None: a
    check box or button that carries `text` itself); `tooltip`: shown before a model is open. For a model:
    `tooltip_for`, `text_for` (a check box's text), `choices` (a combo's values), `value_range` (a spin's or
    slider's), `unavailable` (why the control means nothing for this model or these options; None: enabled),
    `shown` (the value the widget shows) and `written` (the options a person's new value makes). `reads`: other
    fields whose change re-reads the control. `settings`: widget properties (step, decimals, a slider's scale)."""

    attr: str
    name: str
    kind: WidgetKind
    group: str
    label: str | None
    tooltip: str
    text: str = ""
    tooltip_for: Callable[[ModelConfig], str] | None = None
    text_for: Callable[[ModelConfig], str] | None = None
    choices: Callable[[ModelConfig], tuple[Choice, ...]] | None = None
    value_range: Callable[[ModelConfig], tuple[float, float]] | None = None
    unavailable: Callable[[ModelConfig, RunOptions], str | None] | None = None
    shown: Callable[[RunOptions, ModelConfig], Any] | None = None  # default: the field's value
    written: Callable[[RunOptions, ModelConfig, Any], RunOptions] | None = None  # default: the field set
    reads: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CliFlag:
    """One command-line flag of `attnlab trace`: `flag` ("--no-scale") with its argparse keywords (help,
    type, choices, action ...) and `apply(options, parsed value)` -> the options it asks for (ValueError
    with a message for a value written in a form it cannot read)."""

    flag: str
    arguments: Mapping[str, Any]
    apply: Callable[[RunOptions, Any], RunOptions]


@dataclass(frozen=True)
class LessonKey:
    """A key of a lesson's `toggles` table: the TOML types it takes, `problem(value)` why a well-typed value is
    refused (None: fine), `apply(options, value)` the options it makes and `saved(options)` what Save lesson…
    writes for options that differ from the defaults (default: the field's value)."""

    key: str
    types: tuple[type, ...]
    problem: Callable[[Any], str | None] = lambda _value: None
    apply: Callable[[RunOptions, Any], RunOptions] | None = None
    saved: Callable[[Any], Any] = lambda value: value


def _no_peak() -> float | None:
    return None


def _no_pads() -> int:
    return 0


@dataclass(frozen=True)
class RunFacts:
    """What a departure's reason may ask of the run itself, each read only when a reason needs it:
    `peak_logit()` the run's largest |logit| (None: no logits), `pads()` how many <pad> positions its inputs
    hold (a padding mask switched off changes nothing without them)."""

    peak_logit: Callable[[], float | None] = _no_peak
    pads: Callable[[], int] = _no_pads


# Why a run departs from training, for the banner (present/facts.py): (config, options resolved for it, the
# run's facts) -> reasons in words, none when the value is as trained.
Departs = Callable[["ModelConfig", "RunOptions", RunFacts], list[str]]


@dataclass(frozen=True)
class OptionSpec:
    """Everything said about one RunOptions field (see the module docstring)."""

    field: str
    invalidates: Invalidates = EVERYTHING
    controls: tuple[Control, ...] = ()
    cli: tuple[CliFlag, ...] = ()
    lesson: LessonKey | None = None
    # FROM_SITE fields: whether two options differ at one attention site ("enc.0.self"); the run resumes at
    # the first site where one does (engine/runcache.py)
    site_changed: Callable[[RunOptions, RunOptions, str], bool] | None = None
    # the same for a field whose reach depends on the model (a LoRA adapter's layers): (config, before, after, site)
    site_changed_in: Callable[[ModelConfig, RunOptions, RunOptions, str], bool] | None = None
    renames_stages: bool = False  # the stage list's titles name this switch (present/stages.py's cache key)
    # Every spec says whether its field can take the model away from how it was trained, in one of two ways:
    # `departs` (Departs above: the banner's reasons, each naming the switch), or `as_trained`: why no value of
    # it does (a decoding or display choice, where the run happens). tests/engine/test_departures.py walks the table.
    departs: Departs | None = None
    as_trained: str = ""

    def shown(self, control: Control, options: RunOptions, config: ModelConfig) -> Any:
        return control.shown(options, config) if control.shown else _same(options, config, self.field)

    def written(self, control: Control, options: RunOptions, config: ModelConfig, value: Any) -> RunOptions:
        if control.written:
            return control.written(options, config, value)
        return options.replace(**{self.field: value})

    def applied(self, lesson: LessonKey, options: RunOptions, value: Any) -> RunOptions:
        """`options` with this lesson key's value applied."""
        if lesson.apply:
            return lesson.apply(options, value)
        return options.replace(**{self.field: value})
