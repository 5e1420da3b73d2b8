"""RunOptions: the what-if toggles applied at run time. Changing them never rebuilds or retrains weights."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from attnlab.engine import names
from attnlab.engine.config import ModelConfig

NormPlacement = Literal["trained", "pre", "post"]
Device = Literal["auto", "cpu", "cuda"]

SITE_KINDS = names.SITE_KINDS  # re-exported: the kinds a causal toggle or a per-kind mask names


class OptionsError(ValueError):
    """A combination of toggles that cannot run on this model; the message says why."""


site_kind = names.site_kind  # re-exported for callers that only know the options module


@dataclass(frozen=True)
class RunOptions:
    norm: NormPlacement = "trained"  # "pre"/"post" re-wire the same LayerNorms around each sub-layer
    n_heads: int | None = None  # re-split the same W_Q/W_K/W_V/W_O into this many heads (a divisor of d_model)
    # Causal (look-ahead) mask per site kind; a missing kind means: causal only for decoder self-attention.
    causal: tuple[tuple[str, bool], ...] = ()
    padding_mask: bool = True  # block attention to <pad> keys
    pad_to: int = 0  # pad the source (and target) with <pad> up to this many tokens, to show the padding mask
    # Extra blocked [query, key] cells, per site ("enc.0.self") or per site kind ("enc.self", every layer).
    custom_masks: tuple[tuple[str, frozenset[tuple[int, int]]], ...] = ()
    scale: bool = True  # divide QK^T by sqrt(d_k)
    positional: bool = True  # add (or rotate by) the positional encoding
    residual: bool = True  # the x + sublayer(x) skip connections
    temperature: float = 1.0  # softmax(logits / temperature) for the output distribution
    device: Device = "auto"
    record: bool = True  # capture every intermediate tensor in the Trace; False = fast path

    # ---- convenience constructors -------------------------------------------------------------
    def replace(self, **changes) -> RunOptions:
        return dataclasses.replace(self, **changes)

    def with_causal(self, kind: str, on: bool) -> RunOptions:
        rest = tuple((k, v) for k, v in self.causal if k != kind)
        return self.replace(causal=rest + ((kind, bool(on)),))

    def with_custom_mask(self, site: str, cells) -> RunOptions:
        rest = tuple((k, v) for k, v in self.custom_masks if k != site)
        cells = frozenset((int(q), int(k)) for q, k in cells)
        return self.replace(custom_masks=rest + ((site, cells),) if cells else rest)

    def toggled_mask_cell(self, site: str, q: int, k: int) -> RunOptions:
        cells = set(self.custom_cells(site, exact=True))
        cells ^= {(q, k)}
        return self.with_custom_mask(site, cells)

    # ---- queries used by the model --------------------------------------------------------------
    def is_causal(self, site: str) -> bool:
        kind = site_kind(site)
        for k, on in self.causal:
            if k == kind:
                return on
        return kind == "dec.self"

    def custom_cells(self, site: str, exact: bool = False) -> frozenset[tuple[int, int]]:
        """Blocked cells for this site: those set for the site itself plus (unless exact) for its kind."""
        kind = site_kind(site)
        cells: set[tuple[int, int]] = set()
        for k, v in self.custom_masks:
            if k == site or (not exact and k == kind):
                cells |= v
        return frozenset(cells)

    def resolved(self, config: ModelConfig) -> RunOptions:
        """These options with every "as trained" default made explicit for `config`: the norm placement
        ("pre"/"post") and the head count. What a Trace carries, so nobody infers them again."""
        return self.replace(norm="pre" if self.effective_norm_first(config) else "post",
                            n_heads=self.effective_heads(config))

    def effective_norm_first(self, config: ModelConfig) -> bool:
        return config.norm_first if self.norm == "trained" else self.norm == "pre"

    def effective_heads(self, config: ModelConfig) -> int:
        return self.n_heads or config.n_heads

    def problems(self, config: ModelConfig) -> list[str]:
        p: list[str] = []
        h = self.effective_heads(config)
        if h < 1 or config.d_model % h:
            divisors = [d for d in range(1, config.d_model + 1) if config.d_model % d == 0]
            p.append(f"{h} heads do not divide d_model {config.d_model}; choose one of {divisors}")
        elif config.positional == "rotary" and (config.d_model // h) % 2:
            p.append(f"rotary encoding needs an even head size, and {config.d_model}/{h} is odd")
        elif (h * config.kv_heads) % config.n_heads:
            p.append(f"this model shares each K/V head among {config.n_heads // config.kv_heads} Q heads "
                     f"({config.n_heads} Q, {config.kv_heads} K/V heads); {h} heads would cut a K/V head apart. "
                     f"Choose one of {head_choices(config)}")
        if self.norm not in ("trained", "pre", "post"):
            p.append(f"norm must be 'trained', 'pre' or 'post', not {self.norm!r}")
        if not (self.temperature > 0) or self.temperature == float("inf"):
            p.append(f"temperature must be a positive number (got {self.temperature})")
        if self.device not in ("auto", "cpu", "cuda"):
            p.append(f"device must be auto, cpu or cuda (got {self.device!r})")
        if self.pad_to < 0 or self.pad_to > config.max_len:
            p.append(f"pad_to must be between 0 and the model's max length {config.max_len}")
        for k, _ in self.causal:
            if k not in SITE_KINDS:
                p.append(f"unknown attention site kind {k!r}; expected one of {SITE_KINDS}")
        return p

    def validate(self, config: ModelConfig) -> RunOptions:
        problems = self.problems(config)
        if problems:
            raise OptionsError("These options cannot run on this model:\n- " + "\n- ".join(problems))
        return self


def head_choices(config: ModelConfig) -> list[int]:
    """Head counts the same weights can be re-split into: divisors of d_model, with an even head size for
    rotary encoding, and for grouped-query attention only counts that keep the Q heads a multiple of the K/V
    heads (K/V heads of a split into h heads: h * kv_heads / n_heads, a whole number)."""
    return [h for h in range(1, config.d_model + 1)
            if config.d_model % h == 0 and (config.positional != "rotary" or (config.d_model // h) % 2 == 0)
            and (h * config.kv_heads) % config.n_heads == 0]


DEFAULT_OPTIONS = RunOptions()
