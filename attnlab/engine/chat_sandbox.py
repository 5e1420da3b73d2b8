"""The bounds a chat template runs under (issue 38): no value it can build, print or pass on is larger than
MAX_RENDER_CHARS characters, checked *before* the value is made, so a template that would allocate gigabytes
in one C call (`'x' | center(2 * 10**9)`, `s.replace('x', s)`, `range(99999) | join(s)`, `[s] * 10**6` printed,
a string doubled by `~` or `+`) is stopped in one line instead.

A value's weight (`weight`) is about how many characters its text has: a string's length, a list's, tuple's or
dict's items summed (each reference counted, as `str()` would write it), anything else a few characters. The
checks, each one line of ChatTemplateError:
  - the operators `*`, `**`, `+` and `%` (Jinja's intercepted_binops) and `~` (Jinja's Concat node, compiled
    to `environment.checked_join` here);
  - every `{{ … }}` (the environment's finalize) and every buffer joined (macros, `{% set %}…{% endset %}`,
    `{% filter %}`: the environment's concat);
  - every filter: its input and arguments, and the result size of those that multiply (center, indent, join,
    replace, wordwrap, batch, slice, sum, format, tojson);
  - every call of a Python built-in method (`'x'.center(n)`, `s.join(t)`, `s.replace(a, b)`,
    `'{:>9999999}'.format(x)`, `(1).to_bytes(n)`): no whole-number argument past MAX_RENDER_CHARS and the
    result's size estimated first;
  - `lipsum` at most MAX_LIPSUM paragraphs.
Qt-free and torch-free: imported by engine/chat_template.py only.
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Callable, Iterable
from typing import Any

MAX_RENDER_CHARS = 1_000_000  # far more than any model reads
MAX_POWER_BITS = 4096  # `**` and `*` on whole numbers: 10 ** 1000 at most (far past any template's need)
MAX_INDENT = 64  # tojson's indent
MAX_LIPSUM = 100  # paragraphs of lipsum()
MAX_SUM_WORK = 50_000_000  # items copied by `sum` over lists (quadratic: n lists of the total's size)
READING_FILTERS = frozenset(  # filters that return a part of their input or a number: no text is made
    "abs attr boolean count d default dictsort first float groupby int items last length list map max min "
    "random reject rejectattr reverse round select selectattr sort unique".split()
)
_DIGITS = re.compile(r"\d+")


class ChatTemplateError(ValueError):
    """A chat template that cannot be rendered: the message says why, in one line."""


def weight(value: Any, budget: int = MAX_RENDER_CHARS) -> int:
    """About how many characters `str(value)` writes; the count stops soon after passing `budget`."""
    total, stack = 0, [value]
    while stack and total <= budget:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + 4 * len(item)  # brackets, quotes and separators
            stack.extend(item)
        elif isinstance(item, dict):
            total += 2 + 8 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, int) and not isinstance(item, bool):
            total += item.bit_length() // 3 + 1
        else:
            total += 8
    return total


def refuse_past(size: int, doing: str) -> None:
    if size > MAX_RENDER_CHARS:
        raise ChatTemplateError(f"the chat template {doing} past {MAX_RENDER_CHARS:,} characters and was stopped")


def checked(value: Any, doing: str) -> Any:
    refuse_past(weight(value), doing)
    return value


def _numbers(args: Iterable[Any]) -> list[int]:
    return [a for a in args if isinstance(a, int) and not isinstance(a, bool)]


def _largest_number(args: Iterable[Any], doing: str) -> int:
    """The largest whole number among `args` (0 without one); refused past MAX_RENDER_CHARS."""
    largest = max((abs(n) for n in _numbers(args)), default=0)
    if largest > MAX_RENDER_CHARS:
        raise ChatTemplateError(f"the chat template {doing} with the number {largest:.3g}, past {MAX_RENDER_CHARS:,}")
    return largest


def binop_size(operator: str, left: Any, right: Any) -> None:
    """Refuse `left <operator> right` before it is worked out when its result would pass the bounds."""
    if operator in ("*", "**") and _numbers([left]) and _numbers([right]):
        bits = max(left.bit_length(), 1) * right if operator == "**" else left.bit_length() + right.bit_length()
        if bits > MAX_POWER_BITS:
            raise ChatTemplateError(f"the chat template makes a number past {MAX_POWER_BITS:,} bits")
    elif operator == "*" and _numbers([right]):
        refuse_past(weight(left) * max(right, 0), "repeats a value")
    elif operator == "*" and _numbers([left]):
        refuse_past(weight(right) * max(left, 0), "repeats a value")
    elif operator == "+":
        refuse_past(weight(left) + weight(right), "joins values")
    elif operator == "%" and isinstance(left, str):
        refuse_past(format_size(left, right if isinstance(right, tuple) else (right,)), "formats a text")


def format_size(fmt: str, args: Iterable[Any], kwargs: dict[str, Any] | None = None) -> int:
    """An upper bound of the text `fmt % args` or `fmt.format(*args, **kwargs)` writes."""
    values = [*args, *(kwargs or {}).values()]
    if len(values) == 1 and isinstance(values[0], dict):
        values = list(values[0].values())  # `'%(a)s' % {...}`, format_map
    fields = fmt.count("%") + fmt.count("{") + 1
    widths = [int(d) for d in _DIGITS.findall(fmt[:10_000]) if len(d) < 12]
    if any(len(d) >= 12 for d in _DIGITS.findall(fmt)):
        widths.append(MAX_RENDER_CHARS + 1)
    largest = max([*widths, _largest_number(values, "formats a text"), *(weight(v) for v in values)], default=0)
    return len(fmt) + fields * largest


# ---- filters --------------------------------------------------------------------------------------------
def _text_length(value: Any) -> int:
    return len(value) if isinstance(value, str) else weight(value)


def _lines(value: Any) -> int:
    return value.count("\n") + 1 if isinstance(value, str) else 1


def _width(value: Any) -> int:
    return len(value) if isinstance(value, str) else (value if _numbers([value]) else 4)


def _filter_size(name: str, value: Any, args: tuple, kwargs: dict[str, Any]) -> int:
    """An upper bound of the characters filter `name` makes (0: it makes no more than its input)."""
    arg = (list(args) + [None] * 3)[:3]
    if name == "center":
        return max(_text_length(value), _width(kwargs.get("width", arg[0] or 80)))
    if name == "indent":
        width = _width(kwargs.get("width", arg[0] if arg[0] is not None else 4))
        return _text_length(value) + _lines(value) * width
    if name == "replace":
        old, new = kwargs.get("old", arg[0]), kwargs.get("new", arg[1])
        if isinstance(value, str) and isinstance(old, str):
            return len(value) + (value.count(old) if old else len(value) + 1) * weight(new)
    if name == "wordwrap":
        width = max(_width(kwargs.get("width", arg[0] or 79)), 1)
        wrap = kwargs.get("wrapstring", arg[2]) or "\n"
        return _text_length(value) + (_text_length(value) // width + 1) * weight(wrap)
    if name in ("batch", "slice"):
        count = kwargs.get("linecount", kwargs.get("slices", arg[0])) or 0
        return (count if _numbers([count]) else 0) * (weight(kwargs.get("fill_with", arg[1])) + 2)
    if name == "format":
        return format_size(str(value), args, kwargs)
    if name == "tojson":
        indent = kwargs.get("indent", arg[1])
        width = _width(indent) if indent is not None else 0
        if width > MAX_INDENT:
            raise ChatTemplateError(f"the chat template indents JSON by {width:,}, past {MAX_INDENT}")
        return _json_size(value, width)
    return 0


def _json_size(value: Any, width: int, budget: int = MAX_RENDER_CHARS) -> int:
    """About how many characters json.dumps(value, indent=width) writes: each item's text plus, on its own
    line, its depth times the indent; the count stops soon after passing `budget`."""
    total, stack = 0, [(value, 1)]
    while stack and total <= budget:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else list(item)
            total += 2 + len(item) * (4 + width * depth) + width * (depth - 1)
            stack.extend((child, depth + 1) for child in children)
        else:
            total += weight(item, budget) + 2
    return total


def _joined_size(items: list, joiner: Any) -> int:
    return sum(weight(i) for i in items) + len(items) * weight(joiner)


def bounded_filter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """`original` (a Jinja filter) with its input, arguments and result size checked first. Marked as needing
    the context, so Jinja never runs it while compiling: constant folding skips the bounds of `~` and of the
    output (a template of many `'x' | center(999999)` made gigabytes of compiled code)."""
    import jinja2
    from jinja2.utils import _PassArg

    passed = _PassArg.from_obj(original)

    @functools.wraps(original)
    def bounded(context: Any, value: Any, *rest: Any, **kwargs: Any) -> Any:
        _largest_number([*rest, *kwargs.values()], f"calls the filter {name}")
        if name in ("join", "sum") and not isinstance(value, (str, dict)):
            value = list(value)  # materialised once, to be measured
            if name == "join":
                refuse_past(_joined_size(value, kwargs.get("d", rest[0] if rest else "")), "joins values")
            else:
                total = sum(weight(i) for i in value) + weight(kwargs.get("start", 0))
                refuse_past(total, "adds values")
                if any(isinstance(i, (str, list, tuple)) for i in value) and len(value) * total > MAX_SUM_WORK:
                    raise ChatTemplateError("the chat template adds too many sequences together and was stopped")
        if name not in READING_FILTERS:
            refuse_past(weight(value), f"passes the filter {name} a value")
            for item in (*rest, *kwargs.values()):
                refuse_past(weight(item), f"passes the filter {name} an argument")
            refuse_past(_filter_size(name, value, rest, kwargs), f"makes with the filter {name} a text")
        given: dict[Any, tuple] = {
            _PassArg.context: (context,),
            _PassArg.eval_context: (context.eval_ctx,),
            _PassArg.environment: (context.environment,),
        }
        first = given.get(passed, ())
        return original(*first, value, *rest, **kwargs)

    return jinja2.pass_context(bounded)


# ---- built-in methods -------------------------------------------------------------------------------------
def _method_size(name: str, text: Any, args: tuple, kwargs: dict[str, Any]) -> int:  # text: str or bytes
    """An upper bound of the size of `text.<name>(*args, **kwargs)` (0: no larger than `text` and its args)."""
    first = args[0] if args else None
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(text), _width(first))
    if name == "expandtabs":
        tab = kwargs.get("tabsize", first if first is not None else 8)
        return len(text) + text.count("\t" if isinstance(text, str) else b"\t") * _width(tab)
    if name == "replace" and len(args) >= 2:
        old, new = args[0], args[1]
        hits = text.count(old) if old else len(text) + 1
        return len(text) + hits * weight(new)
    if name == "join" and isinstance(first, (str, bytes)):
        return len(first) * (1 + len(text))
    if name == "join" and isinstance(first, list):  # check_call made any other iterable a list
        return _joined_size(first, text)
    if name == "translate" and isinstance(first, dict):
        return len(text) * max([1, *(weight(v) for v in first.values())])
    if name in ("format", "format_map") and isinstance(text, str):
        return format_size(text, args, kwargs)
    return 0


def check_call(obj: Any, args: tuple, kwargs: dict[str, Any]) -> tuple:
    """Refuse a call of a Python built-in method whose arguments or result would pass the bounds; returns the
    arguments to call it with (an iterator given to `str.join` made a list, to be measured)."""
    method = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
    if not isinstance(method, types.BuiltinMethodType):
        return args
    name = getattr(method, "__name__", "?")
    owner = getattr(method, "__self__", None)
    if name == "join" and isinstance(owner, (str, bytes)) and args and not isinstance(args[0], (str, bytes)):
        args = (list(args[0]), *args[1:])
    _largest_number([*args, *kwargs.values()], f"calls {name}")
    for item in (*args, *kwargs.values()):
        if not isinstance(item, (list, tuple, dict)) or name != "join":
            refuse_past(weight(item), f"passes {name} an argument")
    if isinstance(owner, (str, bytes)):
        refuse_past(_method_size(name, owner, args, kwargs), f"makes with {name} a text")
    return args


def bounded_lipsum(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def lipsum(n: int = 5, *args: Any, **kwargs: Any) -> Any:
        if (
            not isinstance(n, int)
            or n > MAX_LIPSUM
            or _largest_number([*args, *kwargs.values()], "calls lipsum") > 1000
        ):
            raise ChatTemplateError(f"the chat template asks lipsum for more than {MAX_LIPSUM} paragraphs")
        return original(n, *args, **kwargs)

    return lipsum
