"""The head-roles map, the attention-sink page and the neuron view as plain data (Qt-free).

- `head_roles(live, trace)`: a layers × heads map per statistic (engine/head_stats.py), each cell naming the
  stage of that head's weights (`stage_keys`), the induction score read on a repeated random sequence;
- `sink_page(trace, site)`: the weight each query puts on the first position, and what that weight carries
  (‖v₀‖ beside the other values' lengths); `sink_what_if(live, trace)`: the same run without its leading
  special token, or with one added;
- `neuron_view(trace, site, head, query, key)`: q ⊙ k per dimension as bars summing to the score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnlab.engine import head_stats, names, qk_dims
from attnlab.present.views.model import MatrixView, matrix_view

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace

PROBE_LENGTH = 50  # the repeated random sequence: 50 tokens, then the same 50 again (as TransformerLens's demos)
STAT_TITLES = {
    "entropy": "entropy (nats)",
    "sink": "attention-sink mass (weight on position 0)",
    "previous": "previous-token score (TransformerLens)",
    "induction": "induction score (TransformerLens, repeated random tokens)",
    "distance": "mean attention distance (positions)",
}


@dataclass(frozen=True)
class HeadRolesView:
    """One map per statistic ([sites, H]); `stage_keys[row]` is the weights stage a click on that row opens."""

    maps: tuple[MatrixView, ...]
    stage_keys: tuple[str, ...]
    notes: tuple[str, ...]


def site_label(site: str) -> str:
    """'dec.3.self' -> 'decoder layer 3'."""
    stack, layer, _kind = site.split(".")
    return f"{names.STACK_NAMES[stack]} layer {layer}"


def row_label(site: str, both_stacks: bool) -> str:
    """A map row's short label: 'layer 3', or 'dec 3' when the map has an encoder's rows and a decoder's."""
    stack, layer, _kind = site.split(".")
    return f"{stack} {layer}" if both_stacks else f"layer {layer}"


def head_stage_key(site: str) -> str:
    """The stage a click on a head of `site` opens: its softmax weights ('dec.3.self.weights')."""
    return names.site_entry(site, "weights")


def probe_trace(live: LiveModel, length: int = PROBE_LENGTH, seed: int = 0) -> Trace:
    """A run of `live` on a repeated random sequence of ordinary tokens after the model's own start token."""
    side = "src" if live.config.has_encoder else "tgt"
    tok = live.tokenizer(side)
    specials = tok.specials
    length = max(2, min(length, (live.config.max_len - 1) // 2))
    ids = head_stats.probe_ids(tok.vocab_size, length, seed, avoid=frozenset(specials.to_ids()))
    start = specials.start_id
    return head_stats.run_exact(live, ([start] if start is not None else []) + ids)


def head_roles(live: LiveModel, trace: Trace, probe: Trace | None = None) -> HeadRolesView:
    """The head-roles maps of `trace` (its induction scores read on `probe`, run here when not given)."""
    probe = probe if probe is not None else probe_trace(live)
    stats = head_stats.head_stats(trace, probe)
    both = len({s.split(".")[0] for s in stats.sites}) > 1
    rows = [row_label(s, both) for s in stats.sites]
    cols = [f"head {h}" for h in range(trace.n_heads)]
    maps = tuple(
        matrix_view(
            f"head_roles.{stat}",
            stats.values[stat].numpy(),
            rows,
            STAT_TITLES[stat],
            cols=cols,
            symmetric=False,
            axes=("layer", "head"),
        )
        for stat in head_stats.STATS
    )
    notes = (
        "Each cell is one head; click it to open that head's attention weights.",
        f"Entropy, sink mass, previous-token score and distance are read on this run ({trace_length(trace)} "
        f"tokens); the induction score on {stats.probe_tokens} tokens: random tokens repeated once.",
        "Scores as TransformerLens's head_detector computes them (error measure 'mul': the share of a head's "
        "weight on the pattern's cells).",
    )
    return HeadRolesView(maps, tuple(head_stage_key(s) for s in stats.sites), notes)


def trace_length(trace: Trace) -> int:
    """Tokens of the run's first self-attention site."""
    sites = head_stats.self_sites(trace)
    return int(head_stats.side_ids(trace, sites[0]).numel()) if sites else 0


@dataclass(frozen=True)
class SinkView:
    """The attention-sink page of one site: the first position's column per head and what it carries."""

    column: MatrixView  # [H, Tq]: the weight each query puts on position 0
    mass: np.ndarray  # [H]
    v0_norm: np.ndarray  # [H]
    v_rest_norm: np.ndarray  # [H]
    share: np.ndarray  # [H]: the first position's share of weight × ‖v‖
    notes: tuple[str, ...]


def sink_page(trace: Trace, site: str) -> SinkView:
    """What each head of `site` gives the first position, in weights and in what those weights carry."""
    facts = qk_dims.sink_facts(trace, site)
    side = "src" if site.startswith("enc.") else "tgt"
    tokens = list(trace[names.side_entry(side, "tokens")])
    column = matrix_view(
        names.site_entry(site, "weights"),
        facts.column.numpy(),
        [f"head {h}" for h in range(facts.mass.numel())],
        f"weight on the first position ({tokens[0]!r}) from each query",
        cols=tokens[: facts.column.shape[1]],
        symmetric=False,
        levels=(0.0, 1.0),
        axes=("head", "query"),
    )
    top = int(facts.mass.argmax())
    mass, share = float(facts.mass[top]), float(facts.share[top])
    verdict = (
        "a sink: the head parks its weight there and adds little"
        if share < mass / 2
        else "this look does carry the first token's value"
    )
    notes = (
        f"Head {top} puts {mass:.0%} of its weight on {tokens[0]!r}; that token's value vector is "
        f"{float(facts.v0_norm[top]):.3g} long against {float(facts.v_rest_norm[top]):.3g} for the others on "
        f"average, so it carries {share:.0%} of what the head adds (weight × ‖v‖): {verdict}.",
        "A head with nothing to look for often parks its weight on the first token, whose value vector is short.",
    )
    return SinkView(
        column, facts.mass.numpy(), facts.v0_norm.numpy(), facts.v_rest_norm.numpy(), facts.share.numpy(), notes
    )


def sink_what_if(live: LiveModel, trace: Trace) -> tuple[str, Trace]:
    """(what was done, the run) : the run without its first token when that is a special token (a BOS, [CLS]), or
    with the model's start token put before it when it has none."""
    side = "src" if live.config.has_encoder else "tgt"
    ids = [int(i) for i in trace[names.side_entry(side, "ids")].reshape(-1).tolist()]
    tok = live.tokenizer(side)
    specials = tok.specials
    if ids[0] in specials.to_ids() and len(ids) > 1:
        return f"without the leading {tok.id_to_token(ids[0])!r}", head_stats.run_exact(live, ids[1:])
    start = specials.start_id
    if start is None:
        raise ValueError("this model has no start token to add as a sink")
    return f"with {tok.id_to_token(start)!r} put first", head_stats.run_exact(live, [start, *ids])


@dataclass(frozen=True)
class NeuronView:
    """q ⊙ k of one (query, key) cell as bars: `products` [dk] sum to `score` (less `rest`, the position terms)."""

    title: str
    products: np.ndarray  # [dk]
    labels: list[str]  # "d0" …
    score: float
    rest: float
    scaled: float
    divisor: float
    notes: tuple[str, ...]


def neuron_view(trace: Trace, site: str, head: int, query: int, key: int) -> NeuronView:
    """Which dimensions make the score of `head` at (`query`, `key`) of `site`."""
    cell = qk_dims.score_dims(trace, site, head, query, key)
    dk = cell.products.numel()
    rotary = " (after rotary positions)" if trace.options.positional and trace.config.positional == "rotary" else ""
    notes = [
        f"The {dk} bars are q[d] · k[d]{rotary}; they sum to the score {cell.score:.4g}.",
        f"Scaled: {cell.score:.4g} ÷ {cell.divisor:.4g} = {cell.scaled:.4g}.",
    ]
    if abs(cell.rest) > 1e-6:
        notes.append(f"The score also adds {cell.rest:.4g} from relative-position terms, not shown as bars.")
    if cell.kv_head != head:
        notes.append(f"Head {head} reads the keys of K/V head {cell.kv_head} (grouped-query attention).")
    side_q = "tgt" if site.startswith("dec.") else "src"
    side_k = "src" if site.endswith(".cross") else side_q
    tq, tk = trace[names.side_entry(side_q, "tokens")], trace[names.side_entry(side_k, "tokens")]
    title = f"{site_label(site)}, head {head}: {tq[query]!r} → {tk[key]!r}, q ⊙ k per dimension"
    return NeuronView(
        title,
        cell.products.numpy().astype(np.float32),
        [f"d{d}" for d in range(dk)],
        cell.score,
        cell.rest,
        cell.scaled,
        cell.divisor,
        tuple(notes),
    )


def site_choices(trace: Trace) -> list[tuple[str, str]]:
    """(site, words) of every attention site of the run, in computation order: what the pages offer to pick."""
    sites = [names.site_of(n) or "" for n in trace.names() if n.endswith(".weights") and names.site_of(n)]
    return [(s, f"{site_label(s)}{' (cross)' if s.endswith('.cross') else ''}") for s in sites]


def site_size(trace: Trace, site: str) -> tuple[int, int, int]:
    """(heads, queries, keys) of `site`'s weights: the ranges the neuron view's pickers offer."""
    heads, tq, tk = trace[names.site_entry(site, "weights")].shape
    return int(heads), int(tq), int(tk)


def sink_comparison(live: LiveModel, trace: Trace, site: str) -> tuple[str, SinkView]:
    """The sink what-if's words and the sink page of the same site in that run."""
    what, other = sink_what_if(live, trace)
    page = sink_page(other, site)
    before = float(qk_dims.sink_facts(trace, site).mass.mean())
    after = float(page.mass.mean())
    note = f"Run {what}: the heads' mean weight on the first position goes from {before:.0%} to {after:.0%}."
    said = (note, f"In that run: {page.notes[0]}")
    return what, SinkView(page.column, page.mass, page.v0_norm, page.v_rest_norm, page.share, said)
