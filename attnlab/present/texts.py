"""The texts in the input boxes: the example sentence, the decoder prefix shown at start-up, and what
Generate appends (the next token after the last real position, as ids and as text). Qt-free."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnlab.engine import names
from attnlab.engine.tokenizer import PAD, Tokenizer

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel
    from attnlab.engine.trace import Trace

EXAMPLE_SENTENCE = "the black cat sees the small dog"
EXAMPLE_SENTENCES = (EXAMPLE_SENTENCE, "le chat noir voit le petit chien")  # English, then French
MAX_PREFIX_TOKENS = 12  # the greedy decoder prefix shown at start-up
RANDOM_PREFIX_TOKENS = 3  # a random model's "translation" is noise: keep it short
# A language model opens on the first words of the example, not all of it: a whole sentence leaves Generate
# nothing to add but "." and </s>. The bundled French model continues "le chat noir" greedily with "est assis
# sur la colline ." (tests/present/test_readable_texts.py runs it).
PROMPT_WORDS = 3


def example_sentence(model: LiveModel) -> str:
    """The model's own example, else the first built-in one its vocabulary covers (no <unk>); for a
    decoder-only model only its first PROMPT_WORDS words, a prompt Generate can continue."""
    if model.metadata.get("example"):
        return str(model.metadata["example"])
    tokenizer = model.src_tokenizer if model.config.has_encoder else model.tgt_tokenizer
    found = EXAMPLE_SENTENCE
    for sentence in EXAMPLE_SENTENCES:
        if tokenizer is not None and tokenizer.unk_id not in tokenizer.encode(sentence)[1]:
            found = sentence
            break
    return " ".join(found.split()[:PROMPT_WORDS]) if model.config.arch == "decoder-only" else found


def default_prefix(model: LiveModel, src: str) -> str:
    """The model's own greedy translation minus its last token (so "Generate" has something to predict);
    a few tokens only for a random model."""
    if model.config.arch != "encoder-decoder" or not src.strip():
        return ""
    tok = model.tokenizer("tgt")
    most = RANDOM_PREFIX_TOKENS if model.metadata.get("random") else MAX_PREFIX_TOKENS
    ids = tok.encode(model.translate(src, max_new_tokens=most + 1))[1]
    return tok.decode(ids[: max(1, min(len(ids) - 1, most))])


def real_length(tokens: list[str]) -> int:
    """How many tokens come before the <pad> tail."""
    n = len(tokens)
    while n and tokens[n - 1] == PAD:
        n -= 1
    return n


def next_token(model: LiveModel, trace: Trace, draws: Any = None) -> tuple[int, str]:
    """The token after the last real (non-<pad>) decoder position: the most probable one, or, when the run
    samples and `draws` (a torch.Generator, `draw_stream`) is given, one drawn from the top-k / top-p cut."""
    tgt_tokens = names.side_entry("tgt", "tokens")
    side = tgt_tokens if tgt_tokens in trace else names.side_entry("src", "tokens")
    last = real_length(trace[side]) - 1
    if draws is not None and getattr(trace.options, "sample", False):
        from attnlab.engine.sampling import SamplingSettings, choose_next

        i = choose_next(trace.read(names.LOGITS, last), SamplingSettings.of(trace.options), draws)
        return i, model.output_tokenizer.id_to_token(i)
    if last == len(trace[side]) - 1:
        return model.next_token(trace)
    i = int(trace.read(names.PROBS, last).argmax())  # only that row is computed and copied (GUI thread)
    return i, model.output_tokenizer.id_to_token(i)


def draw_stream(trace: Trace) -> Any:
    """A torch.Generator at the run's seed when it samples (None when greedy): the app's Generate presses draw
    from one stream, as generate() does, so presses from a prompt give generate()'s tokens."""
    if not getattr(trace.options, "sample", False):
        return None
    from attnlab.engine.sampling import seeded

    return seeded(trace.options.seed)


def extended_ids(trace: Trace, token_id: int, n_prefix: int = 1) -> list[int]:
    """The decoder-side ids of `trace` (without the `n_prefix` start tokens, <s> for attnlab's own models,
    and <pad>) plus one more token."""
    ids = [int(i) for i in trace[names.side_entry("tgt", "ids")]]
    ids = ids[: real_length(trace[names.side_entry("tgt", "tokens")])]
    return ids[n_prefix:] + [token_id]


def ids_text(tokenizer: Tokenizer, ids: list[int]) -> str:
    """Ids as text for the input box; special tokens (which decoding drops) are spelled out."""
    specials = tokenizer.specials.hidden_ids() | {tokenizer.specials.unk}
    if any(i in specials for i in ids):
        return " ".join(tokenizer.id_to_token(i) for i in ids)
    return tokenizer.decode(ids)


def counted(n: int, noun: str) -> str:
    """'1 head', '8 heads': a count with its noun in the right number (nouns that take an -s plural)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
