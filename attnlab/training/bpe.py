"""Byte-pair encoding learned in plain Python, so the same texts always give the same vocabulary.

The `tokenizers` library's BpeTrainer numbers the '##' continuation pieces in hash-map order, and uses those
numbers to break ties between equally frequent pairs, so two runs on the same texts can learn different
vocabularies (huggingface/tokenizers issue #1794). Here ties go to the alphabetically first pair. The merges
are then handed to a `tokenizers` BPE model, so encoding is the library's (fast, and what the app uses).

The algorithm: start from characters ('cat' -> 'c', '##a', '##t'), count every adjacent pair of pieces over
all words (weighted by how often each word occurs), merge the most frequent pair everywhere ('##a' + '##t' ->
'##at'), and repeat until the vocabulary has the size asked for.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from attnlab.engine.tokenizer import SPECIALS, UNK, BPETokenizer, clean_text

PREFIX = "##"
# Pre-tokenizer: split at spaces, and isolate every punctuation mark except the apostrophe and the hyphen,
# so that French elisions and compounds stay inside their word (l'animal, qu'il, grand-père).
ISOLATED_PUNCTUATION = r"[^\w\s'-]"


def _pipeline() -> Any:  # a tokenizers.Tokenizer
    """A `tokenizers` Tokenizer with attnlab's normaliser, pre-tokenizer and decoder, and no model yet."""
    from tokenizers import Regex, decoders, normalizers, pre_tokenizers
    from tokenizers import Tokenizer as HF
    from tokenizers.models import BPE

    hf = HF(BPE(unk_token=UNK, continuing_subword_prefix=PREFIX, fuse_unk=True))
    hf.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Split(Regex(ISOLATED_PUNCTUATION), behavior="isolated"),
        ]
    )
    hf.decoder = decoders.WordPiece(prefix=PREFIX, cleanup=False)
    return hf


def word_counts(texts: Iterable[str]) -> Counter:
    """How often each word occurs, words cut exactly as the finished tokenizer will cut them."""
    hf = _pipeline()
    counts: Counter = Counter()
    for text in texts:
        normalized = hf.normalizer.normalize_str(clean_text(text))
        counts.update(word for word, _span in hf.pre_tokenizer.pre_tokenize_str(normalized))
    return counts


def _join(a: str, b: str) -> str:
    return a + b[len(PREFIX) :]  # b is always a continuation piece


def learn_merges(counts: Counter, vocab_size: int) -> tuple[list[str], list[tuple[str, str]]]:
    """(vocabulary without the specials, merges in the order learned) for at most `vocab_size` - 4 pieces."""
    words = sorted(counts)  # a fixed order
    pieces = [[w[0]] + [PREFIX + c for c in w[1:]] for w in words]
    chars = sorted({c for w in words for c in w})
    alphabet = chars + [PREFIX + c for c in chars]  # every character, word-initial and not
    vocab = list(alphabet)
    known = set(vocab)
    budget = vocab_size - len(SPECIALS)
    pair_count: Counter = Counter()
    where: defaultdict[tuple[str, str], set[int]] = defaultdict(set)  # pair -> indices of words holding it
    for i, word in enumerate(pieces):
        for pair in zip(word, word[1:], strict=False):
            pair_count[pair] += counts[words[i]]
            where[pair].add(i)
    merges: list[tuple[str, str]] = []
    while len(vocab) < budget and pair_count:
        top = max(pair_count.values())
        if top < 1:
            break
        best = min(pair for pair, n in pair_count.items() if n == top)  # ties: alphabetical
        merged = _join(*best)
        merges.append(best)
        if merged not in known:  # two different pairs can spell the same piece ('a'+'##bc', 'ab'+'##c')
            known.add(merged)
            vocab.append(merged)
        for i in sorted(where.pop(best)):
            old = pieces[i]
            for pair in zip(old, old[1:], strict=False):  # take the word's pairs out ...
                pair_count[pair] -= counts[words[i]]
                if pair_count[pair] <= 0:
                    del pair_count[pair]
            new, j = [], 0
            while j < len(old):
                if j + 1 < len(old) and (old[j], old[j + 1]) == best:
                    new.append(merged)
                    j += 2
                else:
                    new.append(old[j])
                    j += 1
            pieces[i] = new
            for pair in zip(new, new[1:], strict=False):  # ... and put the new ones in
                pair_count[pair] += counts[words[i]]
                where[pair].add(i)
    return vocab, merges


def train_bpe(texts: Iterable[str], vocab_size: int) -> BPETokenizer:
    """A BPE tokenizer learned from `texts` (for translation: both sides of the training split, one joint
    vocabulary); the same texts give the same tokenizer every time, whatever their order.

    Like `BPETokenizer.train` (lower-casing, '##' continuation pieces, unseen characters -> <unk>) except that
    the apostrophe and hyphen stay inside words ("l'animal" -> "l'", "##animal" rather than "l", "'",
    "animal") and decoding adds no clean-up, so the decoded pieces of a corpus sentence give back exactly that
    sentence ("... la rue ." and not "... la rue.", "l'animal" and not "l ' animal")."""
    from tokenizers.models import BPE

    vocab, merges = learn_merges(word_counts(texts), vocab_size)
    ids = {tok: i for i, tok in enumerate(list(SPECIALS) + vocab)}
    hf = _pipeline()
    hf.model = BPE(vocab=ids, merges=merges, unk_token=UNK, continuing_subword_prefix=PREFIX, fuse_unk=True)
    return BPETokenizer(hf)
