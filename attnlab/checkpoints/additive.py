"""The additive-attention (Bahdanau) GRU model as a file: safetensors weights + metadata (format, config,
tokenizer JSON). Its own small loader: the model is not a Transformer, so it is not a LiveModel.

    m = attnlab.load_additive()                  # resources/bahdanau.safetensors
    result = m.translate("the black cat sees the dog .")
    result.output_tokens, result.alignment       # alignment: [output steps, source tokens], rows sum to 1
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from attnlab import limits
from attnlab.checkpoints.errors import CheckpointError, Problems
from attnlab.checkpoints.header import read_layout
from attnlab.engine.additive import AdditiveConfig, AdditiveSeq2Seq
from attnlab.engine.tokenizer import Tokenizer
from attnlab.engine.tokenizer_json import tokenizer_from_json
from attnlab.fileio import atomic_write

FORMAT = "attnlab-additive-1"
BUNDLED_NAME = "bahdanau"
TITLE = "Additive attention (GRU)"  # the model's name (present/words.py WORDS["additive"] says the same)


@dataclass(frozen=True)
class AdditiveTranslation:
    source_tokens: list[str]  # the encoder's tokens (pieces + </s>)
    output_tokens: list[str]  # the greedy output pieces, then </s> when the model ended the sentence
    text: str  # the output decoded to text
    alignment: torch.Tensor  # [len(output_tokens), len(source_tokens)]: the attention weights of each step


class AdditiveModel:
    """The GRU encoder-decoder with its tokenizer (one shared English+French vocabulary)."""

    def __init__(self, module: AdditiveSeq2Seq, tokenizer: Tokenizer, metadata: dict | None = None):
        self.module = module.eval()
        self.tokenizer = tokenizer
        self.metadata = metadata or {}
        self.name = TITLE

    @property
    def src_tokenizer(self) -> Tokenizer:  # one vocabulary for both sides; named as a LiveModel names it
        return self.tokenizer

    @property
    def tgt_tokenizer(self) -> Tokenizer:
        return self.tokenizer

    def translate(self, text: str) -> AdditiveTranslation:
        tok = self.tokenizer
        pieces, ids = tok.encode(text)
        src = ids + [tok.eos_id]
        out, alignment = self.module.greedy(src, tok.bos_id, tok.eos_id)
        ended = alignment.shape[0] > len(out)
        out_tokens = [tok.id_to_token(i) for i in out] + (["</s>"] if ended else [])
        return AdditiveTranslation(list(pieces) + ["</s>"], out_tokens, tok.decode(out), alignment)


def save_additive(model: AdditiveModel, path: Path | str) -> None:
    tensors = {k: v.detach().contiguous() for k, v in model.module.state_dict().items()}
    meta = {
        "format": FORMAT,
        "config": json.dumps(model.module.cfg.to_dict()),
        "tokenizer": model.tokenizer.to_json(),
        "metadata": json.dumps(model.metadata, default=str),
    }
    atomic_write(Path(path), lambda tmp: save_file(tensors, str(tmp), metadata=meta))


def is_additive_file(path: Path | str) -> bool:
    """True when `path` is a safetensors file written by save_additive."""
    try:
        with safe_open(str(path), framework="pt") as f:
            return (f.metadata() or {}).get("format") == FORMAT
    except Exception:  # not a safetensors file at all: some other loader's business
        return False


def load_additive(path: Path | str | None = None) -> AdditiveModel:
    """Load an additive-attention model (default: the bundled resources/bahdanau.safetensors). Its config is
    checked against the caps and against the tensor shapes in the header BEFORE any tensor is allocated."""
    path = Path(path) if path is not None else bundled_additive_path()
    problems = Problems(path)
    layout = read_layout(path, problems) if path.is_file() else None
    if layout is None:
        reason = problems.items[0] if problems.items else "there is no file at that path"
        raise CheckpointError(f"{path}: not a readable safetensors file ({reason})")
    meta = layout.metadata
    if meta.get("format") != FORMAT:
        raise CheckpointError(
            f"{path}: not an additive-attention model (format {limits.excerpt(meta.get('format'))}, "
            f"expected {FORMAT!r})"
        )
    try:
        cfg = additive_config(meta.get("config"))
        with torch.device("meta"):  # shapes only: nothing allocated
            expected = {k: tuple(v.shape) for k, v in AdditiveSeq2Seq(cfg).state_dict().items()}
        found = {k: tuple(e["shape"]) for k, e in layout.entries.items()}
        if expected != found or not layout.complete:
            raise ValueError(f"its tensors are not the ones its config describes ({shape_difference(expected, found)})")
        with safe_open(str(path), framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        module = AdditiveSeq2Seq(cfg)
        module.load_state_dict(tensors, strict=True)
        tokenizer = tokenizer_from_json(meta["tokenizer"])
        extra = limits.loads_bounded(meta.get("metadata") or "{}", "the 'metadata' entry", limits.MAX_METADATA_CHARS)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        reason = limits.cut(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 300)
        raise CheckpointError(f"{path}: the additive-attention model does not fit its config ({reason})") from None
    return AdditiveModel(module, tokenizer, extra if isinstance(extra, dict) else {})


def additive_config(text: object) -> AdditiveConfig:
    """The AdditiveConfig in the metadata's JSON, every size a whole number within attnlab's caps."""
    raw = limits.loads_bounded(text if isinstance(text, str) else "", "the config", limits.MAX_CONFIG_CHARS)
    if not isinstance(raw, dict):
        raise ValueError("the config is not a JSON object")
    caps = {"vocab_size": limits.MAX_VOCAB, "max_len": limits.MAX_LEN}
    for name, value in raw.items():
        cap = caps.get(name, limits.MAX_D_MODEL)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
            raise ValueError(f"the config's {limits.excerpt(name, 40)} is {limits.excerpt(value)}: not 1 … {cap:,}")
    return AdditiveConfig(**raw)


def shape_difference(expected: dict[str, tuple], found: dict[str, tuple]) -> str:
    missing = sorted(set(expected) - set(found))
    if missing:
        return f"missing {limits.excerpt(missing[0])}"
    for name, shape in expected.items():
        if found[name] != shape:
            return f"{limits.excerpt(name)} is {list(found[name])}, the config needs {list(shape)}"
    return (
        f"unexpected {limits.excerpt(sorted(set(found) - set(expected))[0])}"
        if set(found) - set(expected)
        else "damaged"
    )


def bundled_additive_path() -> Path:
    return Path(str(resources.files("attnlab.resources").joinpath(f"{BUNDLED_NAME}.safetensors")))
