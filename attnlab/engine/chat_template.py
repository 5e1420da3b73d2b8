"""A chat template rendered as transformers renders it, in a sandbox that stops a hostile one in one line.

The environment is transformers' own (utils/chat_template_utils.py, `_compile_jinja_template`): Jinja's
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loop controls, a `{% generation %}` tag,
`raise_exception`, `strftime_now`, a `tojson` filter that does not escape HTML (ensure_ascii False, indent,
separators, sort_keys), a `dict` that cannot be type-hacked and a `namespace` that refuses underscore names. The
template sees the conversation as `messages`, `add_generation_prompt`, `tools`/`documents` (None) and the
tokenizer's named special tokens (`bos_token`, `eos_token`, ...), as `apply_chat_template` passes them.

A chat template is code from a model folder, so rendering is bounded (issues 35 and 38):
  - the sandbox: no attribute of Python's internals (`''.__class__` is refused), nothing mutable changed;
  - `range` is Jinja's sandboxed one (at most 100,000 items);
  - no value past MAX_RENDER_CHARS characters is made: operators, `~`, filters, built-in methods, macros'
    and blocks' texts are measured before they are worked out (engine/chat_sandbox.py), `**` stops at
    MAX_POWER_BITS;
  - the output stops at MAX_RENDER_CHARS;
  - a time limit (RENDER_SECONDS) and a memory limit (MAX_RENDER_BYTES, measured by tracemalloc) are checked
    on every line the template's code runs and every call it makes (a trace function), so a loop nested past
    reason stops too, and so do many values each under the bounds.
Any failure is one ChatTemplateError line.
"""

from __future__ import annotations

import functools
import json
import sys
import time
import tracemalloc
from datetime import datetime
from types import FrameType
from typing import Any

from attnlab.engine.chat_sandbox import (
    MAX_RENDER_CHARS,
    ChatTemplateError,
    binop_size,
    bounded_filter,
    bounded_lipsum,
    check_call,
    checked,
    refuse_past,
    weight,
)

RENDER_SECONDS = 1.0  # a real template renders in milliseconds (Qwen2.5's, traced: about 10 ms)
MAX_TEMPLATE_CHARS = 100_000  # the largest templates models ship are about 20,000
MAX_RENDER_BYTES = 128 << 20  # what Python may allocate while a template renders (a real one: kilobytes)
TEMPLATE_FILE = "<template>"  # the file name Jinja gives a template compiled from a string


def _one_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]


def _stopped_because(error: BaseException) -> str:
    """Why Python stopped the template, in words (not the exception's name: a person reads this)."""
    if isinstance(error, RecursionError):
        return "it nests or recurses past Python's depth limit"
    if isinstance(error, MemoryError):
        return "it ran out of memory"
    if isinstance(error, OverflowError):
        return f"a number or range is too large ({_one_line(error)})"
    return f"{type(error).__name__}: {_one_line(error)}"


def _environment() -> Any:  # a jinja2 ImmutableSandboxedEnvironment
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(jinja2.ext.Extension):
        """`{% generation %}…{% endgeneration %}` (transformers' AssistantTracker tag): renders its body."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return str(caller())

    class CheckedCodeGenerator(jinja2.compiler.CodeGenerator):
        """`a ~ b` measured before it is joined (environment.checked_join)."""

        @jinja2.compiler.optimizeconst
        def visit_Concat(self, node: Any, frame: Any) -> None:
            self.write("environment.checked_join((")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**", "+", "%"])
        code_generator_class = CheckedCodeGenerator

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            binop_size(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            if not __self.is_safe_callable(__obj):  # the sandbox's own check first: nothing unsafe is measured
                raise jinja2.exceptions.SecurityError(f"{__obj!r} is not safely callable")
            args = check_call(__obj, args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

        def checked_join(self, parts: tuple) -> str:
            refuse_past(sum(weight(p) for p in parts), "joins texts")
            return "".join(map(str, parts))

    def bounded_concat(pieces: Any) -> str:  # a macro's, a {% set %} block's or a {% filter %} block's text
        pieces = list(pieces)
        refuse_past(sum(len(p) if isinstance(p, str) else weight(p) for p in pieces), "builds a text")
        return "".join(pieces)

    class TemplateDict:  # transformers': `dict(...)` without the class's attributes
        def __call__(self, *args: Any, **kwargs: Any) -> dict:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):  # transformers': no underscore names; ours: bounded values
        def __init__(*args: Any, **kwargs: Any) -> None:
            self, rest = args[0], args[1:]
            attrs = dict(*rest, **kwargs)
            for name, value in attrs.items():
                TemplateNamespace._check(name, value)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check(name, value)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check(name: Any, value: Any) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"a namespace cannot store the underscore name {name!r}")
            checked(value, "builds a value")

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
    ) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format: str) -> str:
        return datetime.now().strftime(format)

    env = Bounded(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[Generation, jinja2.ext.loopcontrols],
        finalize=jinja2.pass_context(lambda _context, value: checked(value, "prints a value")),  # never at compile
    )
    env.concat = bounded_concat  # type: ignore[method-assign]
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    env.globals["lipsum"] = bounded_lipsum(env.globals["lipsum"])  # type: ignore[arg-type]
    env.filters = {name: bounded_filter(name, f) for name, f in env.filters.items()}
    return env


@functools.cache
def _env() -> Any:
    return _environment()


@functools.lru_cache(maxsize=8)
def compiled(template: str) -> Any:  # a jinja2 Template
    """`template` compiled in the sandbox (ChatTemplateError for a syntax error, in one line)."""
    import jinja2

    if len(template) > MAX_TEMPLATE_CHARS:  # compiling takes about 2 s per 100,000 characters
        raise ChatTemplateError(
            f"the chat template is {len(template):,} characters long; attnlab reads at most {MAX_TEMPLATE_CHARS:,}"
        )
    try:
        return _env().from_string(template)
    except ChatTemplateError:
        raise
    except jinja2.TemplateError as e:
        raise ChatTemplateError(f"the chat template cannot be read: {_one_line(e)}") from None
    except Exception as e:  # nesting past Jinja's or Python's parser (RecursionError, SyntaxError), MemoryError
        raise ChatTemplateError(f"the chat template cannot be read: {_stopped_because(e)}") from None


class _Deadline:
    """A trace function that stops the template's own code once `seconds` have passed or the memory Python
    allocated since the render began passes MAX_RENDER_BYTES (tracemalloc, started for the render: values
    each under the bounds of engine/chat_sandbox.py can still be many, held in a list, a call's arguments,
    macro frames)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds
        self.started = not tracemalloc.is_tracing()  # a profiler's tracing is left running after the render
        if self.started:
            tracemalloc.start()
        self.base = tracemalloc.get_traced_memory()[0]

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > self.end:
            raise ChatTemplateError(f"the chat template ran past {self.seconds:g} s and was stopped")
        if tracemalloc.get_traced_memory()[0] - self.base > MAX_RENDER_BYTES:
            raise ChatTemplateError(f"the chat template used past {MAX_RENDER_BYTES >> 20} MB and was stopped")
        return self if frame.f_code.co_filename == TEMPLATE_FILE else None

    def close(self) -> None:
        if self.started:
            tracemalloc.stop()


def render(
    template: str,
    messages: list[dict[str, Any]],
    add_generation_prompt: bool,
    special_tokens: dict[str, str],
    seconds: float = RENDER_SECONDS,
) -> str:
    """The text `apply_chat_template(messages, tokenize=False, add_generation_prompt=...)` renders, bounded in
    time and size (ChatTemplateError in one line for any failure, `raise_exception` included)."""
    import jinja2

    compiled_template = compiled(template)
    context = {
        **special_tokens,
        "messages": [dict(m) for m in messages],
        "tools": None,
        "documents": None,
        "add_generation_prompt": bool(add_generation_prompt),
    }
    deadline = _Deadline(seconds)
    previous = sys.gettrace()
    pieces: list[str] = []
    total = 0
    sys.settrace(deadline)
    try:
        for piece in compiled_template.generate(**context):
            total += len(piece)
            if total > MAX_RENDER_CHARS:
                raise ChatTemplateError(f"the chat template wrote past {MAX_RENDER_CHARS:,} characters and was stopped")
            pieces.append(piece)
    except ChatTemplateError:
        raise
    except jinja2.TemplateError as e:
        raise ChatTemplateError(f"the chat template refused this conversation: {_one_line(e)}") from None
    except (MemoryError, RecursionError, OverflowError) as e:
        raise ChatTemplateError(f"the chat template was stopped: {_stopped_because(e)}") from None
    except Exception as e:  # a template's own error (a bad index, a type error): its code, not ours
        raise ChatTemplateError(f"the chat template failed: {type(e).__name__}: {_one_line(e)}") from None
    finally:
        sys.settrace(previous)
        deadline.close()
    return "".join(pieces)


def chosen_template(value: Any, name: str = "default") -> str | None:
    """The template text of a tokenizer_config.json `chat_template`: the string, or from a list of named
    templates ({"name", "template"}) the one called `name` (transformers' default: "default")."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        chosen = named.get(name)
        return chosen if isinstance(chosen, str) else None
    return None
