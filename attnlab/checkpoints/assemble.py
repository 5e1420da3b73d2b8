"""Turn what a checkpoint file holds (config, tensors, tokenizer JSON, metadata) into a LiveModel, checking
everything first. Shared by the safetensors and the .pt readers. Either a whole LiveModel comes back or one
CheckpointError listing every problem; nothing is half-loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sized

import torch

from attnlab import limits
from attnlab.checkpoints.errors import Problems, name_list
from attnlab.checkpoints.limits import check_config_sizes, shape_text
from attnlab.checkpoints.placement import OffloadError, place, plan_for
from attnlab.engine.build import fill_from, loadable_transformer
from attnlab.engine.config import ConfigError, ModelConfig
from attnlab.engine.hf_tokenizer import FOREIGN_KINDS
from attnlab.engine.live import LiveModel, pick_device
from attnlab.engine.memory import weights_refusal
from attnlab.engine.model import Transformer
from attnlab.engine.precision import FLOAT8, FLOAT8_HELD, float8_notice, held_dtype
from attnlab.engine.tokenizer import SPECIALS, Tokenizer, WordTokenizer
from attnlab.engine.tokenizer_json import tokenizer_from_json

FORMAT = "attnlab/1"
NO_TOKENIZER_NOTICE = (
    "This checkpoint has no tokenizer, so its tokens are shown as tok4, tok5, …; ordinary "
    "words become <unk>, but typing a name such as 'tok17' feeds that token id."
)


def generic_tokenizer(vocab_size: int) -> WordTokenizer:
    """A stand-in tokenizer for a vocabulary of unknown words: <pad>, <s>, </s>, <unk>, tok4, tok5, …"""
    return WordTokenizer(list(SPECIALS) + [f"tok{i}" for i in range(len(SPECIALS), max(vocab_size, 4))])


# ---- config ------------------------------------------------------------------------------------------
def config_type_problems(data: dict) -> list[str]:
    """Fields whose JSON type cannot be right (the dataclass itself does not check types)."""
    out = []
    for f in dataclasses.fields(ModelConfig):
        if f.name not in data:
            continue
        value, default = data[f.name], f.default
        if default is None:  # an optional override (qkv_bias, ...): true, false or null
            ok = value is None or isinstance(value, bool)
        elif isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            ok = isinstance(value, str)
        if not ok:
            kind = "bool or null" if default is None else type(default).__name__
            out.append(f"config field {f.name} must be a {kind}, not {limits.excerpt(value)}")
    return out


def parse_config(value: object, problems: Problems) -> ModelConfig | None:
    """`value` is a dict or a JSON string. Adds every problem found; None when no config could be built."""
    if value is None:
        problems.add("there is no model config (the 'config' entry), so the model's sizes are unknown")
        return None
    if isinstance(value, (str, bytes)):
        try:
            value = limits.loads_bounded(value, "the config", limits.MAX_CONFIG_CHARS)
        except ValueError as e:
            problems.add(str(e))
            return None
    if not isinstance(value, dict):
        problems.add(f"the config must be a JSON object of fields, not {type(value).__name__}")
        return None
    type_problems = config_type_problems(value)
    for p in type_problems:
        problems.add(p)
    if type_problems:
        return None
    try:
        config = ModelConfig.from_dict(value)
    except (ConfigError, TypeError) as e:
        problems.add(f"the config cannot be read: {e}")
        return None
    for p in config.problems():
        problems.add(f"config: {p}")
    return config


# ---- tensors -----------------------------------------------------------------------------------------
def build_module(config: ModelConfig) -> Transformer:
    """A module whose parameters hold no values yet (on the meta device when it is big: nothing allocated):
    the caller fills every one of them from the checkpoint (build_live_model: `fill_from`, in the dtype the
    weights are held in). No random numbers are drawn, so the caller's RNG is untouched."""
    return loadable_transformer(config)


def expected_shapes(config: ModelConfig, module: Transformer | None = None) -> dict[str, tuple[int, ...]]:
    """Checkpoint tensor name -> shape for a valid config."""
    module = module if module is not None else build_module(config)
    return {name: tuple(t.shape) for name, t in module.checkpoint_tensors().items()}


def count(items: Sized) -> str:
    return f"{len(items)} tensor{'' if len(items) == 1 else 's'}"


FINITE_SLICE = 1 << 24  # float8 values widened at once by all_finite (32 MB in bfloat16)


def all_finite(t: torch.Tensor) -> bool:
    """No NaN and no ±inf in `t`. One min/max reduction (NaN propagates through both, an infinity shows as the
    min or the max) instead of isfinite(t).all(), which writes a bool tensor as large as t: ~40× faster."""
    if t.numel() == 0:
        return True
    if t.dtype in FLOAT8:  # no reductions in 8 bits: widened (exactly) a slice at a time
        return all(all_finite(part.to(FLOAT8_HELD)) for part in t.detach().reshape(-1).split(FINITE_SLICE))
    # reduce in memory order: a transposed view (GPT-2's Conv1D weights) is ~100× slower to reduce as it is
    strides = t.stride()
    memory_order = sorted(range(t.dim()), key=lambda i: -strides[i])
    low, high = torch.aminmax(t.detach().permute(*memory_order))
    return bool(torch.isfinite(low)) and bool(torch.isfinite(high))


def check_tensors(
    tensors: dict[str, torch.Tensor], config: ModelConfig | None, problems: Problems, module: Transformer | None = None
) -> None:
    """Missing, unexpected, wrongly shaped, non-float and non-finite tensors (as many checks as the config
    allows: without a usable config only the values are checked)."""
    not_float = [n for n, t in tensors.items() if not t.is_floating_point()]
    if not_float:
        problems.add(
            "these tensors hold integers or booleans, but weights must be floating point: "
            + name_list(f"{n} ({tensors[n].dtype})" for n in not_float)
        )
    bad_values = [n for n, t in tensors.items() if t.is_floating_point() and not all_finite(t)]
    if bad_values:
        problems.add("these tensors contain NaN or infinite values: " + name_list(bad_values))
    if config is None or config.problems():
        return
    expected = expected_shapes(config, module)
    missing = [n for n in expected if n not in tensors]
    unexpected = [n for n in tensors if n not in expected]
    if missing:
        problems.add(
            f"{count(missing)} the model needs {'is' if len(missing) == 1 else 'are'} missing: {name_list(missing)}"
        )
    if unexpected:
        problems.add(
            f"{count(unexpected)} {'does' if len(unexpected) == 1 else 'do'} not belong to a model "
            f"with this config: {name_list(unexpected)}"
        )
    wrong = [
        f"{n}: expected {shape_text(shape)} got {shape_text(tensors[n].shape)}"
        for n, shape in expected.items()
        if n in tensors and tuple(tensors[n].shape) != shape
    ]
    if wrong:
        problems.add(
            f"{count(wrong)} {'has' if len(wrong) == 1 else 'have'} the wrong shape: "
            + "; ".join(wrong[:12])
            + (f"; … and {len(wrong) - 12} more" if len(wrong) > 12 else "")
        )


def drop_tied_duplicates(tensors: dict[str, torch.Tensor], module: Transformer, problems: Problems) -> dict:
    """A state dict names a shared or tied parameter under each of its names (src_embed.weight and
    tgt_embed.weight of shared embeddings); a checkpoint keeps the first. The copies must agree."""
    kept = module.checkpoint_tensors()
    first_name = {id(p): name for name, p in kept.items()}
    out = dict(tensors)
    for name, param in module.named_parameters(remove_duplicate=False):
        if name in kept or name not in out:
            continue
        first = first_name[id(param)]
        copy = out.pop(name)
        if first not in out:
            out[first] = copy
        elif out[first].shape != copy.shape or not torch.equal(out[first], copy):
            problems.add(f"{name} should be the same tensor as {first} (they are shared), but it differs")
    return out


# ---- tokenizers --------------------------------------------------------------------------------------
def read_tokenizer(text: object, key: str, problems: Problems) -> Tokenizer | None:
    if text is None:
        return None
    if not isinstance(text, str):
        problems.add(f"the {key} entry must be tokenizer JSON text, not {type(text).__name__}")
        return None
    try:
        return tokenizer_from_json(text)
    except ValueError as e:
        reason = str(e).removeprefix("the tokenizer could not be read: ")
        problems.add(f"the {key} is unreadable ({reason})")
        return None


def resolve_tokenizers(
    config: ModelConfig | None, src_json: object, tgt_json: object, problems: Problems, notices: list[str]
) -> tuple[Tokenizer | None, Tokenizer | None]:
    """(src, tgt) tokenizers. A side without its own tokenizer borrows the other side's when the vocabulary
    sizes agree, else gets the generic tok4, tok5, … stand-in (with a notice)."""
    src = read_tokenizer(src_json, "source tokenizer (src_tokenizer)", problems)
    tgt = read_tokenizer(tgt_json, "target tokenizer (tgt_tokenizer)", problems)
    if config is None:
        return src, tgt
    sides = []
    if config.has_encoder:
        sides.append(("src", config.src_vocab_size))
    if config.has_decoder:
        sides.append(("tgt", config.tgt_vocab_size))
    chosen: dict[str, Tokenizer] = {}
    unreadable = {"src": src_json is not None and src is None, "tgt": tgt_json is not None and tgt is None}
    for side, size in sides:
        own, other = (src, tgt) if side == "src" else (tgt, src)
        label = "source" if side == "src" else "target"
        if unreadable[side]:
            continue
        if own is not None:
            # an imported model's embedding may have spare rows (nanoGPT 50304, Qwen2): only more is wrong
            smaller_ok = own.kind in FOREIGN_KINDS and own.vocab_size < size
            if own.vocab_size != size and not smaller_ok:
                problems.add(
                    f"the {label} tokenizer has {own.vocab_size} tokens but the config says the "
                    f"{label} vocabulary has {size}"
                )
            chosen[side] = own
        elif other is not None and other.vocab_size == size:
            chosen[side] = other
        else:
            chosen[side] = generic_tokenizer(size)
            if NO_TOKENIZER_NOTICE not in notices:
                notices.append(NO_TOKENIZER_NOTICE)
    src = chosen.get("src", src)
    tgt = chosen.get("tgt", tgt)
    return src if src is not None else tgt, tgt if tgt is not None else src


# ---- the whole model ---------------------------------------------------------------------------------
def parse_metadata(value: object, problems: Problems) -> dict:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = limits.loads_bounded(value, "the 'metadata' entry", limits.MAX_METADATA_CHARS)
        except ValueError as e:
            problems.add(str(e))
            return {}
    if not isinstance(value, dict):
        problems.add("the 'metadata' entry must be a JSON object")
        return {}
    # notices are facts about one loading, made by the loader: a file's own are not trusted (or typed)
    return {k: v for k, v in value.items() if k not in ("notices", "notice")}


def assemble(
    problems: Problems,
    *,
    config_value: object,
    tensors: dict[str, torch.Tensor] | None,
    src_json: object,
    tgt_json: object,
    name: str,
    metadata_value: object = None,
    device: str = "cpu",
    notices: list[str] | None = None,
    dtype: str | None = None,
) -> LiveModel:
    """Check everything, then build. `tensors` None means they could not be read (already reported)."""
    notices = list(notices or [])
    config = parse_config(config_value, problems)
    metadata = parse_metadata(metadata_value, problems)
    src_tok, tgt_tok = resolve_tokenizers(config, src_json, tgt_json, problems, notices)
    return build_live_model(
        problems,
        config,
        tensors,
        src_tok,
        tgt_tok,
        name=name,
        metadata=metadata,
        device=device,
        notices=notices,
        dtype=dtype,
    )


def build_live_model(
    problems: Problems,
    config: ModelConfig | None,
    tensors: dict[str, torch.Tensor] | None,
    src_tok: Tokenizer | None,
    tgt_tok: Tokenizer | None,
    *,
    name: str,
    metadata: dict,
    device: str = "cpu",
    notices: list[str] | None = None,
    module: Transformer | None = None,
    dtype: str | None = None,
) -> LiveModel:
    """Check every tensor against the config (names, shapes, values), then build; shared by every reader.
    `config` None or `tensors` None mean they could not be read (already reported). `module`: one already
    built from `config`, to fill. `dtype`: the weights are held as stored (None, "stored") or in this dtype
    ("float32", "bfloat16", "float16"); whether they fit the memory there is is checked before they are
    placed."""
    config_problems = config.problems() if config is not None else []
    for p in config_problems:  # a reader that did not report them (nanoGPT's model_args, an HF config)
        if not any(item.endswith(limits.cut(p)) for item in problems.items):
            problems.add(f"config: {p}")
    usable = config if config is not None and not config_problems else None  # None: nothing to build from
    if usable is not None and tensors is not None:  # every size checked against the file BEFORE allocating
        size_problems = check_config_sizes(usable, {n: tuple(t.shape) for n, t in tensors.items()})
        for p in size_problems:
            problems.add(p)
        usable = None if size_problems else usable
    held = _held(tensors, dtype, problems)
    widened = float8_notice(tensors, held) if tensors is not None and held is not None else ""
    notices = [*(notices or []), widened] if widened else notices
    too_big = _too_big(tensors, held, device) if usable is not None and held is not None else ""
    if module is None:
        module = build_module(usable) if usable is not None and tensors is not None else None
    placement = None
    if too_big and module is not None and held is not None:  # spread whole layers over GPU, host and disk
        placement, why_not = plan_for(module, held, pick_device(device))
        if placement is None:  # at once: not a value of the file is read
            problems.add(f"{too_big}; spread over memory and disk: {why_not}")
            problems.raise_if_any()
    if tensors is not None:
        check_tensors(tensors, config if module is not None else None, problems, module)
    problems.raise_if_any()
    if module is None or tensors is None:  # a reader left its reason unsaid: still one line, no assertion
        problems.add("the checkpoint describes no model that can be built")
        problems.raise_if_any()
    assert module is not None and tensors is not None  # for the type checker: raised just above
    fill_from(module, tensors, held or torch.float32)  # in the held dtype, one tensor at a time
    try:
        module = place(module, placement) if placement is not None else module.to(pick_device(device))
    except OffloadError as e:  # the folder written to and why, not the checkpoint (nothing of it is left)
        problems.add(f"{too_big}; spreading it over memory and disk failed: {e}")
        problems.raise_if_any()
    except RuntimeError as e:
        problems.add(str(e))
        problems.raise_if_any()
    metadata = dict(metadata)
    if placement is not None:
        notices = [*(notices or []), f"{too_big[0].upper()}{too_big[1:]}: {placement.summary()} (accelerate)."]
        metadata["placement"] = placement.summary()
    if notices:
        metadata["notices"] = list(metadata.get("notices", [])) + list(notices)
    live = LiveModel(module, src_tok, tgt_tok, name=limits.cut(str(name), 200), metadata=metadata)
    if placement is not None:
        live.spread(placement)
    return live


def _held(tensors: dict[str, torch.Tensor] | None, dtype: str | None, problems: Problems) -> torch.dtype | None:
    """The dtype the weights will be held in (None when there are no tensors or `dtype` is unknown)."""
    if tensors is None:
        return None
    try:
        return held_dtype(tensors, dtype)
    except ValueError as e:
        problems.add(str(e))
        return None


def _too_big(tensors: dict[str, torch.Tensor] | None, held: torch.dtype | None, device: str) -> str:
    """Why the checkpoint's weights, held in `held`, cannot fit the memory of `device` as a whole (one line with
    the numbers), '' when they fit; build_live_model then spreads them over memory and disk or refuses."""
    try:
        where = pick_device(device)
    except RuntimeError:
        return ""  # reported when the module is moved there
    assert held is not None
    return weights_refusal(sum(t.numel() for t in (tensors or {}).values()), held, where)
