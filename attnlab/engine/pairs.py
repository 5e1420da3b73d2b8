"""A sentence pair as one input: BERT's [CLS] A [SEP] B [SEP] with token types 0 … 0 1 … 1, RoBERTa's
<s> A </s></s> B </s>, as the tokenizer's pair template says (engine/specials.py, Specials.pair)."""

from __future__ import annotations

import re

from attnlab.engine.tokenizer import Tokenizer
from attnlab.engine.tokenizer_bounds import cut_to_positions
from attnlab.limits import MAX_SENTENCE_CHARS

INPUT_CUT = "this model reads at most"  # in every notice of an input cut to the model's length (the app's banner)


def pair_side(
    tok: Tokenizer, pair: tuple[str, str], max_len: int, pad_to: int, notices: list[str]
) -> tuple[list[str], list[int], int, list[int]]:
    """(token strings, ids, real length, token type ids) of a sentence pair: wrapped by the pair template,
    cut to `max_len` with a notice (the first max_len are used), padded to `pad_to` (pads have type 0)."""
    if max(map(len, pair)) > MAX_SENTENCE_CHARS:
        notices.append(f"A sentence has more than {MAX_SENTENCE_CHARS:,} characters; only the first were read.")
    a, b = (tok.encode(cut_to_positions(text[:MAX_SENTENCE_CHARS], max_len, notices))[1] for text in pair)
    ids, types = tok.specials.wrap_pair(a, b)
    if len(ids) > max_len:
        notices.append(
            f"The sentence pair has {len(ids)} tokens but {INPUT_CUT} {max_len}; the first {max_len} are used."
        )
        ids, types = ids[:max_len], types[:max_len]
    n_real = len(ids)
    padding = max(0, pad_to - n_real)
    ids, types = ids + [tok.specials.pad_id] * padding, types + [0] * padding
    return [tok.id_to_token(i) for i in ids], ids, n_real, types


GENERIC_SEPARATOR = "[SEP]"  # what a person may type between two sentences for any model that reads pairs


def pair_separators(tok: Tokenizer) -> list[str]:
    """The strings that split a typed sentence pair: the model's own separator token(s) (its sep token and the
    tokens its pair template puts between A and B: RoBERTa's </s></s>) and the generic "[SEP]"."""
    specials = tok.specials
    ids = list(specials.pair.get("middle", [])) + ([specials.sep] if specials.sep is not None else [])
    own = [tok.id_to_token(i) for i in ids]
    return list(dict.fromkeys([t for t in own if t.strip()] + [GENERIC_SEPARATOR]))


def split_pair(text: str, separators: list[str]) -> tuple[str, str] | None:
    """(A, B) of `text` split at its first run of separators ("A </s></s> B", "A [SEP] B"); None without one."""
    one = "|".join(re.escape(s) for s in sorted(separators, key=len, reverse=True))
    found = re.search(rf"\s*(?:(?:{one})\s*)+", text)
    if found is None:
        return None
    return text[: found.start()].strip(), text[found.end() :].strip()


def pair_help(tok: Tokenizer | None) -> str:
    """How to type a sentence pair for a model whose tokenizer is `tok` (empty when it reads no pairs)."""
    if tok is None or not tok.specials.reads_pairs:
        return ""
    specials = tok.specials
    middle = "".join(tok.id_to_token(i) for i in specials.pair.get("middle", []))
    own = f" or its own separator {middle}" if middle and middle != GENERIC_SEPARATOR else ""
    return f"Type a sentence pair as  A {GENERIC_SEPARATOR} B{own}; the model reads it as " + " ".join(
        "A" if part == "a" else "B" if part == "b" else "".join(tok.id_to_token(i) for i in specials.pair[part])
        for part in ("prefix", "a", "middle", "b", "suffix")
        if part in ("a", "b") or specials.pair.get(part)
    )
