"""A sentence pair as one input: BERT's [CLS] A [SEP] B [SEP] with token types 0 … 0 1 … 1, RoBERTa's
<s> A </s></s> B </s>, as the tokenizer's pair template says (engine/specials.py, Specials.pair)."""

from __future__ import annotations

from attnlab.engine.tokenizer import Tokenizer
from attnlab.limits import MAX_SENTENCE_CHARS

INPUT_CUT = "this model reads at most"  # in every notice of an input cut to the model's length (the app's banner)


def pair_side(
    tok: Tokenizer, pair: tuple[str, str], max_len: int, pad_to: int, notices: list[str]
) -> tuple[list[str], list[int], int, list[int]]:
    """(token strings, ids, real length, token type ids) of a sentence pair: wrapped by the pair template,
    cut to `max_len` with a notice (the first max_len are used), padded to `pad_to` (pads have type 0)."""
    if max(map(len, pair)) > MAX_SENTENCE_CHARS:
        notices.append(f"A sentence has more than {MAX_SENTENCE_CHARS:,} characters; only the first were read.")
    a, b = (tok.encode(text[:MAX_SENTENCE_CHARS])[1] for text in pair)
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
