"""The engine's name grammar: the one place that builds and parses every trace name.

A trace name is dotted: `src.tokens`, `enc.0.self.weights`, `dec.1.norm3.mean`, `dec.0.ffn.hidden`, `logits`.
The engine records through these functions; the stage list, the panels and the explanations read through
them too, so a name is spelled once. `tests/golden/` pins the ordered lists a run produces. The words people
read for each name live in attnlab/present/words.py.

Vocabulary:
- side: "src" (the encoder's input) or "tgt" (the decoder's input)
- stack: "enc" or "dec";  layer: "enc.0";  site: "enc.0.self", "dec.1.cross" (an attention sub-layer)
- site kind: "enc.self", "dec.self" or "dec.cross" (a site without its layer number)
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

SIDES = ("src", "tgt")
STACKS = ("enc", "dec")
# What each stack abbreviation stands for (the words people read are built from these in present/words.py).
STACK_NAMES = {"enc": "encoder", "dec": "decoder"}
ATTENTION_KINDS = ("self", "cross")
SITE_KINDS = ("enc.self", "dec.self", "dec.cross")


class SiteNames(NamedTuple):
    """Every entry name of one attention site (site_entries), field by field in the order a run records them."""

    q: str
    k: str
    v: str
    scores: str
    scaled: str
    mask: str
    masked: str
    weights: str
    context: str
    concat: str
    out: str


# What one attention site records, in order ([H, Tq, dk] for q, [H, Tq, Tk] for the matrices, [Tq, d] after).
SITE_STEPS: tuple[str, ...] = SiteNames._fields
# What one input side records, in order.
INPUT_STEPS = ("tokens", "ids", "embed", "pos", "input")
# What a LayerNorm records.
NORM_STATS = ("in", "mean", "var", "out")
# What an RMSNorm records: its input, the root mean square per token (sqrt(mean(x^2) + eps)) and its output.
RMS_STATS = ("in", "rms", "out")
# What a feed-forward network records.
FFN_PARTS = ("pre", "hidden", "out")
# What a gated (SwiGLU) feed-forward network records: gate(x), up(x), act(gate) * up, down(...).
GATED_FFN_PARTS = ("gate", "up", "hidden", "out")
# What a sparse mixture-of-experts FFN records (engine/moe.py): the router's logits and softmax [T, E], the
# experts each token is sent to [T, k] (int64) with their renormalised weights [T, k], and the weighted sum [T, d].
MOE_FFN_PARTS = ("router_logits", "router_probs", "chosen", "expert_weights", "out")
# Input steps of imported architectures, in order: after "embed" come "type" (token-type embedding),
# "pos", then the embedding norm's entries ("src.embed_norm.in" … ".out"), then "input".
TYPE = "type"
EMBED_NORM = "embed_norm"
# A factorised embedding (ALBERT, ELECTRA) then maps the embedding norm's output to d_model: "src.embed_proj",
# recorded before "input" (w-bertish).
EMBED_PROJ = "embed_proj"
# The output head (BERT's masked-LM transform) before the projection to the vocabulary:
# "head.pre" (dense), "head.hidden" (activation), then the norm "head.norm.in" … "head.norm.out".
HEAD = "head"

LOGITS = "logits"
PROBS = "probs"
UNCAPPED_LOGITS = "logits_uncapped"  # w-norms: the logits before Gemma 2's final soft-capping
# w-norms: what a site with QK-norm also records, before rotary positions ([H|H_kv, T, dk] each): the projected
# Q and K ("q_in", "k_in") and the same after their RMSNorms ("q_normed", "k_normed").
QK_NORM_STEPS = ("q_in", "k_in", "q_normed", "k_normed")
# DeBERTa's disentangled attention (engine/disentangled.py): an encoder site's score is the sum of its terms,
# recorded before "scores" as "enc.0.self.c2c" (Q Kᵀ), ".c2p" (content → position), ".p2c" (position → content);
# once per run "enc.rel.table" (the relative embeddings as the layers read them: after their LayerNorm
# "enc.rel.norm.*") and "enc.rel.distance" (the bucketed distance i - j of each cell [Tq, Tk]).
DISENTANGLED_TERMS = ("c2c", "c2p", "p2c")
# BERT's relative_key(_query) (engine/relative_key.py): "enc.0.self.rel_key" (Q_i · R(i − j)) and, for
# relative_key_query, "enc.0.self.rel_query" (K_j · R(i − j)), recorded before "scores"; once per run
# "enc.rel.distance" (i − j of each cell [Tq, Tk]).
RELATIVE_KEY_TERMS = ("rel_key", "rel_query")
REL = "rel"
# The logit lens (engine/logit_lens.py): the residual stream after each layer through the final norm and the
# output projection; the top-k ids (int64) and probabilities of each layer and position, [L + 1, T, k].
LENS = "lens"
LENS_IDS = f"{LENS}.ids"
LENS_PROBS = f"{LENS}.probs"


def has_lens(arch: str) -> bool:
    """Whether a recorded run of a model of this architecture carries the logit lens (decoder LMs)."""
    return arch == "decoder-only"


# A site whose scores get a position bias (engine/position_bias.py) records these too, after "scaled":
# the bias B [H, Tq, Tk] and "biased" = scaled + B (what the mask is added to).
BIAS_STEPS = ("bias", "biased")


# ---- builders --------------------------------------------------------------------------------------------
def side_entry(side: str, step: str) -> str:
    """'src', 'tokens' -> 'src.tokens'."""
    return f"{side}.{step}"


def layer(stack: str, index: int) -> str:
    """'enc', 0 -> 'enc.0'."""
    return f"{stack}.{index}"


def site(layer_name: str, kind: str) -> str:
    """'dec.1', 'cross' -> 'dec.1.cross'."""
    return f"{layer_name}.{kind}"


def site_entry(site_name: str, step: str) -> str:
    """'enc.0.self', 'weights' -> 'enc.0.self.weights'."""
    return f"{site_name}.{step}"


@lru_cache(maxsize=4096)
def site_entries(site_name: str) -> SiteNames:
    """All of a site's entry names at once, built once per site (every recording run asks for them)."""
    return SiteNames(*(site_entry(site_name, step) for step in SITE_STEPS))


@lru_cache(maxsize=4096)
def bias_entries(site_name: str) -> tuple[str, str]:
    """A biased site's two extra entries: 'enc.0.self' -> ('enc.0.self.bias', 'enc.0.self.biased')."""
    bias, biased = (site_entry(site_name, step) for step in BIAS_STEPS)
    return bias, biased


@lru_cache(maxsize=4096)
def entries(base: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    """f'{base}.{part}' for each part, built once: entries('enc.0.norm1', NORM_STATS) -> ('enc.0.norm1.in', …);
    entries(ffn('enc.0'), FFN_PARTS) -> ('enc.0.ffn.pre', …)."""
    return tuple(f"{base}.{part}" for part in parts)


def capped(site_name: str) -> str:
    """A soft-capped site's scores after cap · tanh(x / cap) (w-norms, Gemma 2): 'dec.0.self.capped'."""
    return site_entry(site_name, "capped")


def qk_norm_entries(site_name: str) -> tuple[str, ...]:
    """A QK-norm site's extra entries: 'dec.0.self' -> ('dec.0.self.q_in', … 'dec.0.self.k_normed')."""
    return entries(site_name, QK_NORM_STEPS)


def norm(layer_name: str, n: int) -> str:
    """The n-th add & norm of a layer (1-based, in computation order): 'enc.0', 2 -> 'enc.0.norm2'."""
    return f"{layer_name}.norm{n}"


def post_norm(layer_name: str, n: int) -> str:
    """The norm on the output of sub-layer n in a sandwich (Gemma 2, w-norms): 'dec.0', 1 -> 'dec.0.postnorm1'."""
    return f"{layer_name}.postnorm{n}"


def norm_entry(norm_name: str, stat: str) -> str:
    """'enc.0.norm1', 'mean' -> 'enc.0.norm1.mean'."""
    return f"{norm_name}.{stat}"


def resid(layer_name: str, n: int) -> str:
    """The residual sum that the n-th norm reads (post-norm) or that leaves the sub-layer (pre-norm)."""
    return f"{layer_name}.resid{n}"


def ffn(layer_name: str) -> str:
    """'enc.0' -> 'enc.0.ffn'."""
    return f"{layer_name}.ffn"


def ffn_entry(layer_name: str, part: str) -> str:
    """'enc.0', 'hidden' -> 'enc.0.ffn.hidden'."""
    return f"{layer_name}.ffn.{part}"


def layer_out(layer_name: str) -> str:
    """A layer's output: 'enc.0.out'."""
    return f"{layer_name}.out"


def stack_norm(stack: str) -> str:
    """The LayerNorm after a stack's last layer: 'enc.norm'."""
    return f"{stack}.norm"


def stack_out(stack: str) -> str:
    """What a stack hands on: 'enc.out' (the memory) or 'dec.out'."""
    return f"{stack}.out"


def norm_stats(kind: str) -> tuple[str, ...]:
    """What a norm of this kind ("layernorm" or "rmsnorm") records, in order."""
    return RMS_STATS if kind == "rmsnorm" else NORM_STATS


def ffn_parts(kind: str) -> tuple[str, ...]:
    """What a feed-forward network of this kind ("plain" or "gated") records, in order."""
    return GATED_FFN_PARTS if kind == "gated" else FFN_PARTS


def embed_norm(side: str) -> str:
    """The LayerNorm on a side's embeddings: 'src' -> 'src.embed_norm' (entries via norm_entry)."""
    return f"{side}.{EMBED_NORM}"


def head_entry(part: str) -> str:
    """A step of the output head: 'pre' -> 'head.pre'; its norm is head_entry('norm') = 'head.norm'."""
    return f"{HEAD}.{part}"


def rel_entry(stack: str, part: str) -> str:
    """DeBERTa's relative-position entries of a stack: 'enc', 'table' -> 'enc.rel.table' ('norm': its LayerNorm)."""
    return f"{stack}.{REL}.{part}"


def term_entries(site_name: str) -> tuple[str, str, str]:
    """A site's disentangled score terms: 'enc.0.self' -> ('enc.0.self.c2c', '….c2p', '….p2c')."""
    c2c, c2p, p2c = (site_entry(site_name, term) for term in DISENTANGLED_TERMS)
    return c2c, c2p, p2c


def key_term_entries(site_name: str) -> tuple[str, str]:
    """A site's BERT relative_key terms: 'enc.0.self' -> ('enc.0.self.rel_key', 'enc.0.self.rel_query')."""
    rel_key, rel_query = (site_entry(site_name, term) for term in RELATIVE_KEY_TERMS)
    return rel_key, rel_query


def kv_head_map(n_heads: int, n_kv_heads: int) -> list[int]:
    """For each Q head, the K/V head it reads: grouped-query attention shares one K/V head among
    n_heads / n_kv_heads consecutive Q heads (8 Q, 2 K/V -> [0, 0, 0, 0, 1, 1, 1, 1])."""
    group = n_heads // n_kv_heads
    return [h // group for h in range(n_heads)]


def sublayer_count(stack: str, has_cross: bool) -> int:
    """How many add & norm steps a layer of this stack has: 2 (attention, FFN) or 3 (self, cross, FFN)."""
    return 3 if stack == "dec" and has_cross else 2


def sublayer_kind(stack: str, n: int, has_cross: bool) -> str:
    """What add & norm n (1-based) of a layer wraps: 'self', 'cross' or 'ffn' (n past the end: 'ffn')."""
    if n >= sublayer_count(stack, has_cross):
        return "ffn"
    return "cross" if n == 2 else "self"


def sublayer_out(layer_name: str, n: int, has_cross: bool) -> str:
    """The output of the sub-layer that add & norm n wraps: 'dec.0', 2, True -> 'dec.0.cross.out'."""
    stack, _index = layer_name.split(".")
    kind = sublayer_kind(stack, n, has_cross)
    return ffn_entry(layer_name, "out") if kind == "ffn" else site_entry(site(layer_name, kind), "out")


# ---- readers ---------------------------------------------------------------------------------------------
def split_site(site_name: str) -> tuple[str, int, str]:
    """'dec.2.cross' -> ('dec', 2, 'cross'). Raises ValueError for anything that is not a site name."""
    parts = site_name.split(".")
    if len(parts) != 3 or parts[0] not in STACKS or not parts[1].isdigit() or parts[2] not in ATTENTION_KINDS:
        raise ValueError(f"{site_name!r} is not an attention site name (like 'enc.0.self' or 'dec.1.cross')")
    return parts[0], int(parts[1]), parts[2]


def takes_window(site_name: str, pattern: int = 0) -> bool:
    """Whether a site uses the model's sliding window (Mistral): decoder self-attention only; with a `pattern`
    p (Gemma 2/3, ModelConfig.sliding_window_pattern) not in the layers whose index + 1 is divisible by p (those
    attend globally)."""
    if not (site_name.startswith("dec.") and site_name.endswith(".self")):
        return False
    return not pattern or (split_site(site_name)[1] + 1) % pattern != 0


def is_site(name: str) -> bool:
    try:
        split_site(name)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=4096)
def site_kind(site_name: str) -> str:
    """'dec.2.cross' -> 'dec.cross' (remembered: every run asks it of every site, more than once)."""
    stack, _index, kind = split_site(site_name)
    return f"{stack}.{kind}"


def site_of(entry: str) -> str | None:
    """'enc.0.self.weights' -> 'enc.0.self'; None for an entry that is not an attention site's."""
    head, _, step = entry.rpartition(".")
    return head if (step in SITE_STEPS or step in BIAS_STEPS) and is_site(head) else None


def stack_of(name: str) -> str:
    """'dec.1.cross' / 'enc.0' -> 'dec' / 'enc'."""
    return name.split(".", 1)[0]


def stack_side(stack: str) -> str:
    """The token side a stack's rows belong to: encoder layers read 'src', decoder layers 'tgt'."""
    return "src" if stack == "enc" else "tgt"


def side_stack(side: str) -> str:
    """The stack that reads a side's tokens: 'src' -> 'enc', 'tgt' -> 'dec'."""
    return "enc" if side == "src" else "dec"


def layer_of(name: str) -> str | None:
    """'dec.1.cross.weights' / 'dec.1.norm2.mean' -> 'dec.1'; None outside the layers."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0] in STACKS and parts[1].isdigit() else None


def layer_position(name: str) -> tuple[str, int] | None:
    """'dec.1.cross.weights' -> ('dec', 1): the stack and 0-based index of the layer a name lies in; None
    outside the layers."""
    found = layer_of(name)
    if found is None:
        return None
    stack, index = found.split(".")
    return stack, int(index)


def side_of(name: str) -> str | None:
    """'src.embed' / 'tgt.tokens' -> 'src' / 'tgt': the token side of an input entry; None for the rest."""
    first = name.split(".", 1)[0]
    return first if first in SIDES else None


def step_of(name: str) -> str:
    """'enc.0.self.weights' -> 'weights': the last part of a dotted name (a site's step, a stat, a part)."""
    return name.rpartition(".")[2]


def site_kind_parts(kind: str) -> tuple[str, str]:
    """'dec.cross' -> ('dec', 'cross'): the stack and attention kind of a site kind (SITE_KINDS)."""
    stack, _, attention = kind.partition(".")
    return stack, attention


def first_site(stack: str, kind: str = "self") -> str:
    """'enc' -> 'enc.0.self': the `kind` attention of a stack's first layer (what a per-kind toggle shows)."""
    return site(layer(stack, 0), kind)
