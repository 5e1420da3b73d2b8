"""A GGUF file's tokenizer, built from its metadata (tokenizer.ggml.*) as transformers builds it
(integrations/gguf/gguf_tokenizer_mapping.py: get_gguf_tokenizer + convert_gguf_tokenizer), with the `tokenizers`
library only:

  tokenizer.ggml.model "llama"  SentencePiece BPE as LlamaTokenizer builds it: Metaspace (prepend on the first
                                piece), byte fallback, merges from the file or from the scores; Gemma files as
                                GemmaTokenizer (spaces to ▁ in a normalizer, merges ordered by the token order,
                                runs of spaces respelled ▁▁); Phi-3 with the prefix ▁ from a normalizer
  tokenizer.ggml.model "gpt2"   byte-level BPE (GPT2Tokenizer), split by the regex tokenizer.ggml.pre names
  control tokens (type 3) special, user-defined ones (type 4) added whole; <bos> put first when
  tokenizer.ggml.add_bos_token says so (llama files: unless it says not), <eos> last when add_eos_token does.
Any other tokenizer model is refused in one line (the model then opens with ids shown as numbers: no).
"""

from __future__ import annotations

from typing import Any

from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.tokenizer_wrapping import flag_processor, wrapping
from attnlab.engine.hf_tokenizer import LibraryTokenizer

CONTROL, USER_DEFINED = 3, 4
MAX_TOKEN_CHARS = 4_096  # a real vocabulary's longest token is a few hundred characters
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
GPT4O_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# tokenizer.ggml.pre -> the regex its merges were learned on (transformers' GGUF_PRE_TOKENIZER_SPLITS)
SPLITS = {
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "dbrx", "smaug-bpe"), LLAMA3_SPLIT),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez"), QWEN2_SPLIT),
    **dict.fromkeys(("gpt-4o", "llama4"), GPT4O_SPLIT),
}
SPECIAL_KEYS = {"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id", "pad": "padding_token_id"}


def _merges(meta: dict[str, Any], tokens: list[str], scores: dict[str, float] | None = None) -> list[tuple[str, str]]:
    """The file's merges, or the ones its vocabulary implies (transformers' generate_merges: every split of a
    token into two tokens, best-scored first)."""
    given = meta.get("tokenizer.ggml.merges")
    if given is not None:
        return [(a, b) for a, _, b in (str(m).partition(" ") for m in given)]
    vocab = {t: i for i, t in enumerate(tokens)}
    if scores is None:
        raw = meta.get("tokenizer.ggml.scores")
        scores = dict(zip(tokens, (float(s) for s in raw), strict=True)) if raw is not None else {}
    found = []
    for merge, piece_score in scores.items():
        local = [
            (merge[:i], merge[i:], piece_score)
            for i in range(1, len(merge))
            if merge[:i] in vocab and merge[i:] in vocab
        ]
        local.sort(key=lambda x: (vocab[x[0]], vocab[x[1]]))
        found.extend(local)
    found.sort(key=lambda x: (x[2], len(x[0]), len(x[1])), reverse=True)
    return [(a, b) for a, b, _ in found]


def _sentencepiece(meta: dict[str, Any], arch: str) -> Any:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    tokens = [str(t) for t in meta["tokenizer.ggml.tokens"]]
    if arch in ("gemma", "gemma2", "gemma3"):  # GemmaTokenizer, runs of spaces respelled, merges in token order
        tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t for t in tokens]
        merges = _merges(meta, tokens, {t: -i for i, t in enumerate(tokens)})
        vocab = {t: i for i, t in enumerate(tokens)}
        tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=True, unk_token="<unk>", byte_fallback=True))
        tok.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
        tok.normalizer = normalizers.Replace(" ", "\u2581")
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
        return tok
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab, _merges(meta, tokens), fuse_unk=True, byte_fallback=True))
    if arch == "phi3":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.pre_tokenizer = None
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    return tok


def byte_alphabet() -> dict[int, str]:
    """GPT-2's bytes -> printable characters (transformers' bytes_to_unicode)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars, n = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, map(chr, chars), strict=True))


def _byte_level(meta: dict[str, Any]) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    spelling = byte_alphabet()
    alphabet = set(spelling.values())
    tokens = [str(t) for t in meta["tokenizer.ggml.tokens"]]
    vocab = {
        t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")): i for i, t in enumerate(tokens)
    }
    model = models.BPE(vocab, _merges(meta, tokens), continuing_subword_prefix="", end_of_word_suffix="")
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    split = SPLITS.get(str(meta.get("tokenizer.ggml.pre", "")))
    if split is not None:
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(split), behavior="isolated"), pre_tokenizers.ByteLevel(False, use_regex=False)]
        )
    return tok


def _add_marked(tok: Any, meta: dict[str, Any], byte_level: bool) -> None:
    """Control tokens as special tokens, user-defined ones as added tokens (kept whole in the text)."""
    from tokenizers import AddedToken

    types = meta.get("tokenizer.ggml.token_type")
    if types is None:
        return
    tokens = [str(t) for t in meta["tokenizer.ggml.tokens"]]
    spelled = set(byte_alphabet().values()) if byte_level else None
    control = [
        AddedToken(t, normalized=False, special=True)
        for t, kind in zip(tokens, types, strict=True)
        if int(kind) == CONTROL and (spelled is None or set(t) <= spelled)
    ]
    if control:
        tok.add_special_tokens(control)
    vocab = tok.get_vocab()
    user = [
        AddedToken(t, normalized=False)
        for t, kind in zip(tokens, types, strict=True)
        if int(kind) == USER_DEFINED and t in vocab
    ]
    if user:
        tok.add_tokens(user)


def gguf_tokenizer(meta: dict[str, Any], arch: str, problems: Problems) -> tuple[LibraryTokenizer | None, str]:
    """(the tokenizer, what it is); (None, "") with the reason in `problems` when the file's cannot be built."""
    kind = meta.get("tokenizer.ggml.model")
    if meta.get("tokenizer.ggml.tokens") is None:
        return None, ""
    if kind not in ("llama", "gpt2"):
        problems.add(f"its tokenizer.ggml.model is {kind!r}; attnlab builds GGUF tokenizers of kind llama and gpt2")
        return None, ""
    n = len(meta["tokenizer.ggml.tokens"])
    longest = max((len(str(t)) for t in meta["tokenizer.ggml.tokens"]), default=0)
    if longest > MAX_TOKEN_CHARS:  # merges are derived by splitting each token: quadratic in its length
        problems.add(f"its tokenizer has a token of {longest:,} characters (at most {MAX_TOKEN_CHARS:,})")
        return None, ""
    for key in ("tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
        if meta.get(key) is not None and len(meta[key]) != n:
            problems.add(f"its {key} has {len(meta[key]):,} items for {n:,} tokens")
            return None, ""
    try:
        tok = _sentencepiece(meta, arch) if kind == "llama" else _byte_level(meta)
        _add_marked(tok, meta, kind == "gpt2")
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # the tokenizers library's errors and Rust panics
        problems.add(
            f"its tokenizer cannot be built from the metadata ({str(e).splitlines()[0][:200] if str(e) else e})"
        )
        return None, ""
    tokens = meta["tokenizer.ggml.tokens"]
    ids = {
        name: int(meta[f"tokenizer.ggml.{key}"])
        for name, key in SPECIAL_KEYS.items()
        if isinstance(meta.get(f"tokenizer.ggml.{key}"), int) and 0 <= meta[f"tokenizer.ggml.{key}"] < len(tokens)
    }
    flags = {
        "add_bos_token": meta.get("tokenizer.ggml.add_bos_token", kind == "llama"),
        "add_eos_token": meta.get("tokenizer.ggml.add_eos_token", False),
    }
    token_of = tok.id_to_token
    specials = wrapping("llama", flag_processor(flags, ids, token_of), ids, None, token_of)
    what = "SentencePiece BPE" if kind == "llama" else "byte-level BPE"
    return LibraryTokenizer(tok, specials), f"the GGUF file's tokenizer.ggml.* ({what}, {len(tokens):,} tokens)"


def chat_template(meta: dict[str, Any]) -> str | None:
    value = meta.get("tokenizer.chat_template")
    return value if isinstance(value, str) else None
