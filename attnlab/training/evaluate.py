"""Held-out figures for the classroom models.

translation: exact match of greedy translation, and cross-attention alignment accuracy (does the decoder, when
    producing a French content word, attend most to the English word it translates?).
language:    next-token accuracy and perplexity on the held-out French sentences.

The held-out split is rebuilt from the corpus facts stored in the checkpoint metadata (generator seed, number
of pairs, split seed and fraction), so these are sentences training never saw.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import torch
import torch.nn.functional as F

from attnlab.engine import names
from attnlab.engine.live import LiveModel
from attnlab.engine.options import RunOptions
from attnlab.engine.recorder import Recorder
from attnlab.engine.tokenizer import BPETokenizer, Tokenizer
from attnlab.training import additive_eval
from attnlab.training.additive_eval import held_out_pairs as additive_held_out
from attnlab.training.corpus import Pair
from attnlab.training.data import decoder_ids, make_batch, pad_batch, source_ids, word_piece_spans
from attnlab.training.handwritten import handwritten_pairs, score, words

if TYPE_CHECKING:
    from attnlab.checkpoints.additive import AdditiveModel

    Translator = LiveModel | AdditiveModel  # a model `attnlab eval` measures as a translation model

FAST = RunOptions(record=False, device="cpu")
RECORDED = RunOptions(record=True, device="cpu")
CHUNK = 64  # sentences per forward pass
# Readings: which decoder position stands for a target word. For a word whose chosen piece is p (0-based):
#   "predicting": position p, whose OUTPUT predicts piece p (its input is the previous token): standard
#   "input":      position p + 1, whose INPUT is piece p itself
# The chosen piece is the word's first piece, except in "predicting_after_elision", which skips an elided
# French prefix (l'animal, n'était, qu'il: the piece after the apostrophe), since that prefix is really the
# article, the negation or the conjunction, not the content word.
READINGS = {"predicting": (0, False), "input": (1, False), "predicting_after_elision": (0, True)}
Item = TypeVar("Item")


def held_out_pairs(model: LiveModel, n: int | None = None) -> tuple[Pair, ...]:
    """The first `n` test pairs (all when n is None) of the split this model was trained beside."""
    from attnlab.training.train import split_corpus

    corpus = model.metadata.get("corpus")
    if not isinstance(corpus, dict) or "seed" not in corpus:
        raise ValueError(
            f"{model.name!r} has no corpus facts in its metadata, so its held-out split cannot "
            "be rebuilt; only classroom models trained by `attnlab train` can be evaluated"
        )
    _, test = split_corpus(
        int(corpus["n_pairs"]),
        int(corpus["seed"]),
        float(corpus["test_fraction"]),
        int(corpus["split_seed"]),
        int(corpus.get("version", 1)),
    )
    return test if n is None else test[:n]


def _chunks(items: Sequence[Item], size: int = CHUNK) -> Iterator[Sequence[Item]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _tokenizers(model: Translator) -> tuple[Tokenizer, Tokenizer]:
    """(source, target) tokenizers of a translation model (one built without them cannot be measured)."""
    src, tgt = model.src_tokenizer, model.tgt_tokenizer
    if src is None or tgt is None:
        raise ValueError(f"{model.name!r} has no source or target tokenizer, so it cannot be evaluated")
    return src, tgt


def _bpe_tokenizers(model: Translator) -> tuple[BPETokenizer, BPETokenizer]:
    """`_tokenizers` of a classroom model: BPE, whose character offsets give each word's pieces."""
    src, tgt = _tokenizers(model)
    if not isinstance(src, BPETokenizer) or not isinstance(tgt, BPETokenizer):
        raise ValueError(f"{model.name!r} has no BPE tokenizers, so its alignment cannot be measured")
    return src, tgt


# ---- translation: exact match ------------------------------------------------------------------------
@torch.inference_mode()
def greedy_translate(model: Translator, sources: Sequence[str], max_new_tokens: int = 60) -> list[list[int]]:
    """Greedy decoding of a batch of sentences; returns the generated piece ids of each (without specials).
    `model`: a LiveModel, or the additive-attention GRU model (an AdditiveModel)."""
    if not isinstance(model, LiveModel):
        return additive_eval.greedy_ids(model, sources)
    src_tok, tok = _tokenizers(model)
    module = model.module.to("cpu")
    out: list[list[int]] = []
    for chunk in _chunks(list(sources)):
        src, src_pad = pad_batch([source_ids(src_tok, s) for s in chunk], tok.pad_id)  # [B, S]
        tgt = torch.full((len(chunk), 1), tok.bos_id, dtype=torch.long)  # [B, 1]
        finished = torch.zeros(len(chunk), dtype=torch.bool)  # [B]
        for _ in range(min(max_new_tokens, model.config.max_len - 2)):
            logits = module(src, tgt, options=FAST, src_pad=src_pad)  # [B, t, V]
            nxt = logits[:, -1].argmax(-1)  # [B]
            nxt = torch.where(finished, torch.full_like(nxt, tok.pad_id), nxt)
            tgt = torch.cat([tgt, nxt[:, None]], dim=1)  # [B, t+1]
            finished |= nxt == tok.eos_id
            if bool(finished.all()):
                break
        for row in tgt[:, 1:].tolist():
            out.append(row[: row.index(tok.eos_id)] if tok.eos_id in row else row)  # unfinished: the cap
    return out


def exact_match(model: Translator, pairs: Sequence[Pair]) -> dict[str, Any]:
    """Share of sentences whose greedy translation is the reference text, word for word ("exact_match"), and
    the stricter share that also used the reference's own pieces ("exact_match_pieces": a model may spell a
    word with other pieces, e.g. "attendu" "##s" where the tokenizer cuts "attend" "##us")."""
    _, tok = _tokenizers(model)
    generated = greedy_translate(model, [p.src for p in pairs])
    outputs = [tok.decode(g) for g in generated]
    same_text = [o == p.tgt for o, p in zip(outputs, pairs, strict=True)]
    same_pieces = [g == tok.encode(p.tgt)[1] for g, p in zip(generated, pairs, strict=True)]
    misses = [
        {"src": p.src, "reference": p.tgt, "output": o}
        for o, p, ok in zip(outputs, pairs, same_text, strict=True)
        if not ok
    ]
    n = max(len(pairs), 1)
    return {
        "exact_match": round(sum(same_text) / n, 4),
        "exact_match_pieces": round(sum(same_pieces) / n, 4),
        "n": len(pairs),
        "examples_of_errors": misses[:5],
    }


# ---- translation: cross-attention alignment ----------------------------------------------------------
class CrossAttentionRecorder(Recorder):
    """Keeps only the cross-attention weights, for the whole batch: name -> [B, H, T, S]."""

    def __init__(self) -> None:
        super().__init__(True, eager=True)  # eager: the weights arrive as values, not as derivation rules

    def __call__(self, name: str, tensor: torch.Tensor, batched: bool = True) -> None:
        site = names.site_of(name)
        if batched and site and name == names.site_entry(site, "weights") and names.split_site(site)[2] == "cross":
            self._items[name] = tensor.detach()

    def tokens(self, name: str, tokens: list[str]) -> None:
        pass


@torch.inference_mode()
def cross_attention(model: LiveModel, pairs: Sequence[Pair]) -> list[torch.Tensor]:
    """Teacher-forced cross-attention of each pair: one tensor [L, H, T, S] per pair (T = <s> + target pieces,
    S = source pieces + </s>)."""
    src_tok, tok = _tokenizers(model)
    module = model.module.to("cpu")
    n_layers = model.config.n_decoder_layers
    result: list[torch.Tensor] = []
    for chunk in _chunks(list(pairs)):
        examples = [(source_ids(src_tok, p.src), decoder_ids(tok, p.tgt)) for p in chunk]
        batch = make_batch(examples, tok.pad_id)
        rec = CrossAttentionRecorder()
        module(batch.src, batch.tgt_in, options=RECORDED, rec=rec, src_pad=batch.src_pad, tgt_pad=batch.tgt_pad)
        cross = [names.site_entry(names.site(names.layer("dec", i), "cross"), "weights") for i in range(n_layers)]
        layers = [cast(torch.Tensor, rec._items[name]) for name in cross]  # each [B, H, T, S] (it keeps tensors)
        stacked = torch.stack(layers, dim=1)  # [B, L, H, T, S]
        for b, (src_ids, tgt_ids) in enumerate(examples):
            result.append(stacked[b, :, :, : len(tgt_ids) - 1, : len(src_ids)].clone())  # [L, H, T, S]
    return result


def word_attention(weights: torch.Tensor, spans: list[list[int]]) -> torch.Tensor:
    """weights [..., S] over source pieces (</s> last) -> [..., W + 1]: per-word sums, then </s>."""
    words = [weights[..., span].sum(-1) for span in spans]
    return torch.stack(words + [weights[..., -1]], dim=-1)


def alignment_accuracy(
    model: Translator, pairs: Sequence[Pair], attention: Sequence[torch.Tensor] | None = None
) -> dict[str, Any]:
    """Share of aligned target content words whose strongest cross-attention (source pieces summed per word,
    </s> counted as a word of its own) falls on the aligned source word; per layer and head, and for the
    head-average of each layer, for each reading (see READINGS). `attention`: one [L, H, T, S] per pair
    (default: the Transformer's cross-attention, `cross_attention`)."""
    src_tok, tok = _bpe_tokenizers(model)
    if attention is None:
        if not isinstance(model, LiveModel):
            raise ValueError(f"{model.name!r} has no cross-attention: pass its attention")
        attention = cross_attention(model, pairs)
    weights = list(attention)
    L, H = weights[0].shape[:2] if weights else (1, 1)
    hits = {k: torch.zeros(L, H + 1) for k in READINGS}  # last column: the head-average
    total = 0
    for pair, att in zip(pairs, weights, strict=True):  # att [L, H, T, S]
        src_spans = word_piece_spans(src_tok, pair.src)
        tgt_spans = word_piece_spans(tok, pair.tgt)
        tgt_words = pair.tgt.split(" ")
        att = torch.cat([att, att.mean(1, keepdim=True)], dim=1)  # [L, H+1, T, S]
        words = word_attention(att, src_spans)  # [L, H+1, T, W+1]
        for tgt_word, src_word in pair.alignment:
            span = tgt_spans[tgt_word]
            content = span[min(elided_pieces(tok, tgt_words[tgt_word]), len(span) - 1)]
            total += 1
            for key, (shift, skip_elision) in READINGS.items():
                chosen = words[:, :, (content if skip_elision else span[0]) + shift].argmax(-1)  # [L, H+1]
                hits[key] += (chosen == src_word).float()
    return _alignment_summary(hits, total, H)


def elided_pieces(tokenizer: Tokenizer, word: str) -> int:
    """How many pieces an elided French prefix takes (l'animal -> "l", "'" = 2); 0 without an apostrophe."""
    cut = word.find("'")
    return 0 if cut < 0 else len(tokenizer.encode(word[: cut + 1])[1])


def _alignment_summary(hits: dict[str, torch.Tensor], total: int, n_heads: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n_aligned_words": total}
    for key, h in hits.items():
        acc = h / max(total, 1)  # [L, H+1]
        per_head = acc[:, :n_heads]
        best = int(per_head.argmax())
        layer, head = divmod(best, n_heads)
        out[key] = {
            "best": {"layer": layer, "head": head, "accuracy": round(float(per_head[layer, head]), 4)},
            "layer_head_average": [round(float(a), 4) for a in acc[:, n_heads]],
            "per_head": [[round(float(a), 4) for a in row] for row in per_head],
        }
    return out


# ---- language model -----------------------------------------------------------------------------------
@torch.inference_mode()
def language_figures(model: LiveModel, texts: Sequence[str]) -> dict[str, Any]:
    """Next-token accuracy and perplexity (per BPE piece, </s> included) on `texts`."""
    tok = model.tokenizer("tgt")
    module = model.module.to("cpu")
    nll_sum, correct, count = 0.0, 0, 0
    for chunk in _chunks(list(texts)):
        batch = make_batch([(None, decoder_ids(tok, t)) for t in chunk], tok.pad_id)
        logits = module(None, batch.tgt_in, options=FAST, tgt_pad=batch.tgt_pad)  # [B, T, V]
        real = ~batch.tgt_pad  # [B, T]
        nll_sum += float(F.cross_entropy(logits[real], batch.tgt_out[real], reduction="sum"))
        correct += int((logits.argmax(-1)[real] == batch.tgt_out[real]).sum())
        count += int(real.sum())
    return {
        "next_token_accuracy": round(correct / max(count, 1), 4),
        "perplexity": round(math.exp(nll_sum / max(count, 1)), 4),
        "n_tokens": count,
        "n_sentences": len(texts),
    }


def teaching_examples(model: LiveModel) -> dict[str, Any]:
    """How the model translates the corpus's TEACHING_EXAMPLES (sentences the app suggests; they are always in
    the training split, so this is not a held-out figure)."""
    from attnlab.training.corpus import TEACHING_EXAMPLES

    generated = greedy_translate(model, [p.src for p in TEACHING_EXAMPLES])
    _, tok = _tokenizers(model)
    outputs = [tok.decode(g) for g in generated]
    return {
        "correct": sum(o == p.tgt for o, p in zip(outputs, TEACHING_EXAMPLES, strict=True)),
        "n": len(TEACHING_EXAMPLES),
        "wrong": [
            {"src": p.src, "reference": p.tgt, "output": o}
            for o, p in zip(outputs, TEACHING_EXAMPLES, strict=True)
            if o != p.tgt
        ],
    }


# ---- the hand-written set -------------------------------------------------------------------------------
def handwritten_figures(model: LiveModel | AdditiveModel) -> dict:
    """How a translation model does on the hand-written set: the figures, by feature, and every sentence."""
    pairs = handwritten_pairs()
    generated = greedy_translate(model, [en for en, _, _ in pairs])
    tok = model.tgt_tokenizer
    if tok is None:
        raise ValueError("a model without a target tokenizer cannot translate")
    outputs = [tok.decode(g) for g in generated]
    figures = score(outputs, [fr for _, fr, _ in pairs])
    by_feature: dict[str, dict] = {}
    for feature in dict.fromkeys(f for _, _, f in pairs):
        chosen = [i for i, (_, _, f) in enumerate(pairs) if f == feature]
        by_feature[feature] = score([outputs[i] for i in chosen], [pairs[i][1] for i in chosen])
    figures["by_feature"] = {
        k: {"exact": v["exact"], "n": v["n"], "word_accuracy": v["word_accuracy"]} for k, v in by_feature.items()
    }
    figures["sentences"] = [
        {"en": en, "reference": fr, "output": out, "correct": words(out) == words(fr)}
        for (en, fr, _), out in zip(pairs, outputs, strict=True)
    ]
    return figures


# ---- the additive GRU model -------------------------------------------------------------------------------
def _by_trained_length(model: AdditiveModel, pairs: Sequence[Pair]) -> dict[str, dict[str, Any]]:
    """Exact match on the sentences as short as those it trained on (at most `max_source` source ids) and on
    the longer ones, which it never saw in training."""
    limit = int(model.metadata.get("max_source", 12))
    short = [p for p in pairs if len(source_ids(model.tokenizer, p.src)) <= limit]
    long = [p for p in pairs if len(source_ids(model.tokenizer, p.src)) > limit]
    result: dict[str, dict[str, Any]] = {}
    for key, part in ((f"at_most_{limit}_ids", short), (f"over_{limit}_ids", long)):
        if part:
            figures = exact_match(model, part)
            result[key] = {"exact_match": figures["exact_match"], "n": figures["n"]}
    return result


def evaluate_additive(model: AdditiveModel, n: int | None = None) -> dict[str, Any]:
    """The translation figures (exact match, alignment, hand-written set) of the GRU model."""
    pairs, facts = additive_held_out(model, n)
    figures: dict[str, Any] = {"kind": "translation", "attention": "additive", "n_sentences": len(pairs), **facts}
    figures.update(exact_match(model, pairs))
    figures["exact_match_by_source_length"] = _by_trained_length(model, pairs)
    figures["alignment"] = alignment_accuracy(model, pairs, additive_eval.attention(model, pairs))
    figures["handwritten"] = handwritten_figures(model)
    return figures


# ---- everything ----------------------------------------------------------------------------------------
def evaluate(model: Translator, n: int | None = None) -> dict[str, Any]:
    """The figures for a classroom model on its held-out split (the first `n` pairs, or all); the additive
    GRU model (an AdditiveModel) is measured by `additive_eval.evaluate_additive`."""
    if not isinstance(model, LiveModel):
        return evaluate_additive(model, n)
    pairs = held_out_pairs(model, n)
    if model.config.arch == "encoder-decoder":
        figures: dict[str, Any] = {"kind": "translation", "n_sentences": len(pairs)}
        figures.update(exact_match(model, pairs))
        figures["alignment"] = alignment_accuracy(model, pairs)
        figures["teaching_examples"] = teaching_examples(model)
        figures["handwritten"] = handwritten_figures(model)
        return figures
    if model.config.arch == "decoder-only":
        return {"kind": "language", **language_figures(model, [p.tgt for p in pairs])}
    raise ValueError("only encoder-decoder and decoder-only classroom models can be evaluated")
