"""A chat template rendered as transformers renders it, in a sandbox that stops a hostile one in one line.

The environment is transformers' own (utils/chat_template_utils.py, `_compile_jinja_template`): Jinja's
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loop controls, a `{% generation %}` tag,
`raise_exception`, `strftime_now`, a `tojson` filter that does not escape HTML (ensure_ascii False, indent,
separators, sort_keys), a `dict` that cannot be type-hacked and a `namespace` that refuses underscore names. The
template sees the conversation as `messages`, `add_generation_prompt`, `tools`/`documents` (None) and the
tokenizer's named special tokens (`bos_token`, `eos_token`, ...), as `apply_chat_template` passes them.

A chat template is code from a model folder, so rendering is bounded (issue 35):
  - the sandbox: no attribute of Python's internals (`''.__class__` is refused), nothing mutable changed;
  - `range` is Jinja's sandboxed one (at most 100,000 items);
  - `*` refuses a repetition past MAX_RENDER_CHARS (`'a' * 10**10` never allocates), `**` a number past
    MAX_POWER_BITS, and a namespace attribute a value past MAX_RENDER_CHARS (a string doubled in a loop);
  - the output stops at MAX_RENDER_CHARS;
  - a time limit (RENDER_SECONDS) is checked on every line the template's code runs (a trace function), so a
    loop nested past reason stops too.
Any failure is one ChatTemplateError line.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from datetime import datetime
from types import FrameType
from typing import Any

RENDER_SECONDS = 2.0  # a real template renders in milliseconds
MAX_RENDER_CHARS = 1_000_000  # far more than any model reads
MAX_POWER_BITS = 4096  # `**` on whole numbers: 10 ** 1000 at most (far past any template's need)
TEMPLATE_FILE = "<template>"  # the file name Jinja gives a template compiled from a string


class ChatTemplateError(ValueError):
    """A chat template that cannot be rendered: the message says why, in one line."""


def _one_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0][:200]


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _checked(value: Any, doing: str) -> Any:
    if _size(value) > MAX_RENDER_CHARS:
        raise ChatTemplateError(f"the chat template {doing} past {MAX_RENDER_CHARS:,} characters and was stopped")
    return value


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

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**"])

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and isinstance(left, int) and isinstance(right, int):
                if right > 0 and max(left.bit_length(), 1) * right > MAX_POWER_BITS:
                    raise ChatTemplateError(f"the chat template makes a number past {MAX_POWER_BITS:,} bits")
            if operator == "*" and isinstance(left, int) and isinstance(right, int):
                if left.bit_length() + right.bit_length() > MAX_POWER_BITS:
                    raise ChatTemplateError(f"the chat template makes a number past {MAX_POWER_BITS:,} bits")
            if operator == "*" and isinstance(right, int) and _size(left) * right > MAX_RENDER_CHARS:
                raise ChatTemplateError(f"the chat template repeats a text past {MAX_RENDER_CHARS:,} characters")
            if operator == "*" and isinstance(left, int) and _size(right) * left > MAX_RENDER_CHARS:
                raise ChatTemplateError(f"the chat template repeats a text past {MAX_RENDER_CHARS:,} characters")
            return super().call_binop(context, operator, left, right)

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
            _checked(value, "builds a value")

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
    ) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format: str) -> str:
        return datetime.now().strftime(format)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


@functools.cache
def _env() -> Any:
    return _environment()


@functools.lru_cache(maxsize=8)
def compiled(template: str) -> Any:  # a jinja2 Template
    """`template` compiled in the sandbox (ChatTemplateError for a syntax error, in one line)."""
    import jinja2

    try:
        return _env().from_string(template)
    except jinja2.TemplateError as e:
        raise ChatTemplateError(f"the chat template cannot be read: {_one_line(e)}") from None


class _Deadline:
    """A trace function that stops the template's own code once `seconds` have passed."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > self.end:
            raise ChatTemplateError(f"the chat template ran past {self.seconds:g} s and was stopped")
        return self if frame.f_code.co_filename == TEMPLATE_FILE else None


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
        raise ChatTemplateError(f"the chat template was stopped ({type(e).__name__}: {_one_line(e)})") from None
    except Exception as e:  # a template's own error (a bad index, a type error): its code, not ours
        raise ChatTemplateError(f"the chat template failed: {type(e).__name__}: {_one_line(e)}") from None
    finally:
        sys.settrace(previous)
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
