"""A model folder's own tokenizer and special tokens, read from the files Hugging Face writes.

  tokenizer.json                      the `tokenizers` library, as is
  vocab.json + merges.txt             GPT-2 / RoBERTa byte-level BPE
  vocab.txt                           BERT WordPiece (lower-casing per tokenizer_config.json's do_lower_case)
  source.spm + target.spm + vocab.json  Marian (SentencePiece; the optional extra attnlab[hf])
  tokenizer.model / spiece.model / sentencepiece.bpe.model  a SentencePiece model alone (Llama, T5, XLM-R)

The special tokens' strings come from tokenizer_config.json / special_tokens_map.json (else the family's
usual ones, FAMILY_TOKENS); which ones are put around the input is the tokenizer's post-processor, chosen as
transformers chooses it (tokenizer_wrapping.py): tokenizer.json's own, else the family's (BERT [CLS] … [SEP],
RoBERTa <s> … </s>, Marian / T5 … </s> with the decoder starting at <pad>), add_bos_token / add_eos_token
in tokenizer_config.json ruling over the family's (not over tokenizer.json's). Stored padding and truncation
are never applied.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnlab import limits
from attnlab.bounded_read import (
    MAX_SMALL_JSON_BYTES,
    MAX_VOCAB_BYTES,
    FileRefused,
    confined,
    read_bytes,
    read_json,
    regular_file_size,
)
from attnlab.checkpoints import deberta_spm
from attnlab.checkpoints import tokenizer_seq2seq as seq2seq
from attnlab.checkpoints.errors import Problems
from attnlab.checkpoints.file_checks import has_file, regular_file
from attnlab.checkpoints.header import short_reason
from attnlab.checkpoints.tokenizer_wrapping import (
    FAMILY_ROLES,
    family_processor,
    flag_processor,
    flags_given,
    wrapping,
)
from attnlab.engine.hf_tokenizer import LibraryTokenizer, SentencePieceModelTokenizer, SentencePieceTokenizer
from attnlab.engine.specials import Specials
from attnlab.engine.tokenizer import Tokenizer

SPM_FILES = ("tokenizer.model", "spiece.model", "sentencepiece.bpe.model")  # what transformers looks for
FAIRSEQ_SPM = "sentencepiece.bpe.model"  # XLM-R / CamemBERT: numbered the fairseq way (engine/hf_tokenizer.py)
SPM_UNREAD = {  # families whose SentencePiece model transformers reads with more than attnlab does (w-bertish)
    "camembert": "CamemBERT numbers it its own way (<s>NOTUSED, <pad>, </s>NOTUSED, <unk>, <unk>NOTUSED first)",
    "albert": "ALBERT's tokenizer lower-cases and strips accents before SentencePiece",
}
NAMES = ("pad", "bos", "eos", "unk", "cls", "sep", "mask")
FAMILY_TOKENS = {
    "gpt2": {"bos": "<|endoftext|>", "eos": "<|endoftext|>", "unk": "<|endoftext|>"},
    "bert": {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"},
    "roberta": {
        "bos": "<s>",
        "eos": "</s>",
        "pad": "<pad>",
        "unk": "<unk>",
        "cls": "<s>",
        "sep": "</s>",
        "mask": "<mask>",
    },
    "marian": {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"},
    "llama": {"bos": "<s>", "eos": "</s>", "unk": "<unk>"},
    "qwen2": {"eos": "<|endoftext|>", "pad": "<|endoftext|>"},
    "t5": {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"},
}
FAMILY_TOKENS["distilbert"] = FAMILY_TOKENS["bert"]
FAMILY_TOKENS["xlm-roberta"] = FAMILY_TOKENS["camembert"] = FAMILY_TOKENS["roberta"]
FAMILY_TOKENS["nanogpt"] = {}
FAMILY_TOKENS["electra"] = FAMILY_TOKENS["bert"]  # ElectraTokenizer: BERT's WordPiece (w-bertish)
FAMILY_TOKENS["albert"] = {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
# the decoder families that came later, by the tokenizer class transformers gives them (used only where the folder's
# tokenizer_config.json / special_tokens_map.json name no such token)
FAMILY_TOKENS["mistral"] = FAMILY_TOKENS["phi3"] = FAMILY_TOKENS["llama"]  # LlamaTokenizer
FAMILY_TOKENS["gemma"] = {"bos": "<bos>", "eos": "<eos>", "unk": "<unk>", "pad": "<pad>"}  # GemmaTokenizer
for _family in ("gpt_neox", "stablelm", "olmo", "gptj", "phi"):  # GPT-NeoX / GPT-2 byte-level BPE
    FAMILY_TOKENS[_family] = FAMILY_TOKENS["gpt2"]
FAMILY_TOKENS["deberta-v2"] = {**FAMILY_TOKENS["bert"], "bos": "[CLS]", "eos": "[SEP]"}  # DebertaV2Tokenizer
FAMILY_TOKENS["mpnet"] = {**FAMILY_TOKENS["roberta"], "unk": "[UNK]"}  # MPNetTokenizer's defaults
FAMILY_TOKENS["opt"] = {"bos": "</s>", "eos": "</s>", "unk": "</s>", "pad": "<pad>"}  # OPT's GPT2Tokenizer
FAMILY_TOKENS["bart"] = FAMILY_TOKENS["mbart"] = FAMILY_TOKENS["roberta"]  # Bart/MBartTokenizer's defaults
FAMILY_TOKENS["pegasus"] = {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"}  # PegasusTokenizer's
FAMILY_TOKENS["qwen3"] = FAMILY_TOKENS["qwen2"]  # w-norms: Qwen2Tokenizer
FAMILY_TOKENS["gemma2"] = FAMILY_TOKENS["gemma3_text"] = FAMILY_TOKENS["gemma"]  # GemmaTokenizer
FAMILY_TOKENS["olmo2"] = FAMILY_TOKENS["gpt2"]  # GPT2Tokenizer (byte-level BPE)


def read_json_file(path: Path, problems: Problems, max_bytes: int = MAX_SMALL_JSON_BYTES) -> dict:
    """The JSON object in a file of the model folder ({} when there is none): through the bounded reader,
    which refuses a file outside the folder, a pipe or device, one over `max_bytes`, or one nested too deeply."""
    if not os.path.lexists(path):
        return {}
    try:
        data = read_json(confined(path.parent, path.name, path.name), path.name, max_bytes)
    except FileRefused as e:
        problems.add(str(e))
        return {}
    return data if isinstance(data, dict) else {}


def library_file(folder: Path, name: str) -> str:
    """The path of a tokenizer file the `tokenizers` library may open itself: inside the folder, a regular
    file, under the size cap (checked from stat, so a 3 GB sparse file is refused unread)."""
    path = confined(folder, name, name)
    regular_file_size(path, name, MAX_VOCAB_BYTES)
    return str(path)


def token_text(value: object) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def special_ids(
    folder: Path, model_type: str, lookup: Callable[[str], int | None], problems: Problems
) -> dict[str, int]:
    """name -> id for the special tokens the tokenizer has. `lookup(text)` is the tokenizer's id or None."""
    tok_config = read_json_file(folder / "tokenizer_config.json", problems)
    special_map = read_json_file(folder / "special_tokens_map.json", problems)
    found: dict[str, int] = {}
    for name in NAMES:
        text = (
            token_text(tok_config.get(f"{name}_token"))
            or token_text(special_map.get(f"{name}_token"))
            or FAMILY_TOKENS.get(model_type, {}).get(name)
        )
        if text is not None and (token_id := lookup(text)) is not None:
            found[name] = token_id
    return found


def decoder_start(
    model_type: str, ids: dict[str, int], hf_config: dict, token_of: Callable[[int], str | None]
) -> int | list[int] | None:
    """The token an encoder-decoder's decoder starts from (Marian, T5: <pad>; the BART family's start and forced
    first tokens: tokenizer_seq2seq.py); None for other families."""
    if FAMILY_ROLES.get(model_type) != "encoder":
        return None
    if model_type in seq2seq.FAMILIES:
        return seq2seq.decoder_starts(model_type, hf_config, token_of)
    start = hf_config.get("decoder_start_token_id", ids.get("pad"))
    return int(start) if isinstance(start, int) else None


def family_specials(
    model_type: str, ids: dict[str, int], hf_config: dict, tok_config: dict, token_of: Callable[[int], str]
) -> Specials:
    """The wrapping of a tokenizer that stores no post-processor (tokenizer_wrapping.py): the family's."""
    processor = family_processor(model_type, ids, token_of)
    if processor is None or flags_given(tok_config):
        processor = flag_processor(tok_config, ids, token_of)
    return wrapping(model_type, processor, ids, decoder_start(model_type, ids, hf_config, token_of), token_of)


def library_tokenizer(folder: Path, tok_config: dict[str, Any]) -> tuple[Any, str]:
    """(a `tokenizers.Tokenizer` from tokenizer.json, vocab.json + merges.txt or vocab.txt, which files);
    (None, "") if none."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    if has_file(folder, "tokenizer.json"):  # a FIFO or device by that name is refused, never opened
        return Tokenizer.from_file(library_file(folder, "tokenizer.json")), "tokenizer.json"
    if has_file(folder, "vocab.json") and has_file(folder, "merges.txt"):
        tok = Tokenizer(models.BPE.from_file(library_file(folder, "vocab.json"), library_file(folder, "merges.txt")))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=bool(tok_config.get("add_prefix_space")))
        tok.decoder = decoders.ByteLevel()
        return tok, "vocab.json + merges.txt (byte-level BPE)"
    if has_file(folder, deberta_spm.SPM):  # DeBERTa-v2/v3
        return deberta_spm.deberta_tokenizer(folder, tok_config), deberta_spm.DESCRIPTION
    if has_file(folder, "vocab.txt"):
        unk = token_text(tok_config.get("unk_token")) or "[UNK]"
        tok = Tokenizer(models.WordPiece.from_file(library_file(folder, "vocab.txt"), unk_token=unk))
        lower = bool(tok_config.get("do_lower_case", True))
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=bool(tok_config.get("tokenize_chinese_chars", True)),
            strip_accents=tok_config.get("strip_accents"),
            lowercase=lower,
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        return tok, f"vocab.txt (WordPiece{', lower-cased' if lower else ''})"
    return None, ""


def marian_tokenizers(
    folder: Path, model_type: str, hf_config: dict[str, Any], problems: Problems
) -> tuple[Tokenizer | None, Tokenizer | None, str]:
    vocab = read_json_file(folder / "vocab.json", problems, MAX_VOCAB_BYTES)
    pieces = {str(k): v for k, v in vocab.items() if isinstance(v, int) and not isinstance(v, bool)}
    refused = marian_id_problem(pieces, hf_config)
    if refused:
        problems.add(refused)
        return None, None, ""
    tok_config = read_json_file(folder / "tokenizer_config.json", problems)
    ids = special_ids(folder, model_type, pieces.get, problems)
    numbered = {i: p for p, i in pieces.items()}
    specials = family_specials(model_type, ids, hf_config, tok_config, lambda i: numbered.get(i, f"#{i}"))
    out = []
    for name in ("source.spm", "target.spm"):
        try:
            model_bytes = read_bytes(confined(folder, name, name), name, MAX_VOCAB_BYTES)
            out.append(SentencePieceTokenizer(model_bytes, pieces, specials))
        except FileRefused as e:
            problems.add(str(e))
            return None, None, ""
        except ImportError as e:
            problems.add(str(e))
            return None, None, ""
        except (OSError, RuntimeError) as e:
            problems.add(f"{name} cannot be read as a SentencePiece model ({e})")
            return None, None, ""
    return out[0], out[1], "source.spm / target.spm (SentencePiece) + vocab.json"


def marian_id_problem(pieces: dict[str, int], hf_config: dict[str, Any]) -> str:
    """Why Marian's vocab.json numbering cannot be used ('' when it can): every id must be a distinct number
    below the model's vocab_size, checked before any table of that size is built; so must the id the decoder
    starts from."""
    size = hf_config.get("vocab_size")
    size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else limits.MAX_VOCAB
    outside = [f"{limits.excerpt(k, 30)}: {v:,}" for k, v in pieces.items() if not 0 <= v < size]
    if outside:
        return (
            f"vocab.json numbers pieces outside 0 … {size - 1:,} (the model's vocab_size): "
            + ", ".join(outside[:4])
            + (f", … and {len(outside) - 4:,} more" if len(outside) > 4 else "")
        )
    if len(set(pieces.values())) != len(pieces):
        return "vocab.json gives the same id to two pieces; each piece needs its own"
    start = hf_config.get("decoder_start_token_id")
    if start is not None and (not isinstance(start, int) or isinstance(start, bool) or not 0 <= start < size):
        return f"config.json's decoder_start_token_id {limits.excerpt(start)} is not a token id below {size:,}"
    return ""


def folder_tokenizers(
    folder: Path, hf_config: dict[str, Any], problems: Problems
) -> tuple[Tokenizer | None, Tokenizer | None, str]:
    """(source, target, description); (None, None, "") when the folder has no tokenizer files."""
    model_type = str(hf_config.get("model_type", ""))
    hf_config = seq2seq.with_generation_config(folder, hf_config, lambda path: read_json_file(path, problems))
    if has_file(folder, "source.spm") and has_file(folder, "target.spm"):
        return marian_tokenizers(folder, model_type, hf_config, problems)
    tok_config = read_json_file(folder / "tokenizer_config.json", problems)
    try:
        hf_tok, desc = library_tokenizer(folder, tok_config)
    except FileRefused as e:
        problems.add(str(e))
        return None, None, ""
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # the tokenizers library's own errors, and its Rust panics (a BaseException)
        problems.add(f"the tokenizer files cannot be read ({limits.cut(library_reason(e), 200)})")
        return None, None, ""
    if hf_tok is None:
        return sentencepiece_model(folder, model_type, hf_config, tok_config, problems)
    hf_tok.no_padding()  # stored padding / truncation: transformers applies neither unless a call asks
    hf_tok.no_truncation()
    ids = special_ids(folder, model_type, hf_tok.token_to_id, problems)
    added = [
        t
        for t in (token_text(tok_config.get(f"{n}_token")) or FAMILY_TOKENS.get(model_type, {}).get(n) for n in NAMES)
        if t is not None and hf_tok.token_to_id(t) is not None
    ]
    if added and desc != "tokenizer.json":
        hf_tok.add_special_tokens(sorted(set(added)))  # typed "[MASK]" stays one token, as in transformers
    token_of = hf_tok.id_to_token
    try:
        if desc == "tokenizer.json":  # its post-processor (or none): transformers 5 drops add_bos/add_eos_token
            start = decoder_start(model_type, ids, hf_config, token_of)
            eos = (ids["eos"], token_of(ids["eos"])) if "eos" in ids else None
            processor = seq2seq.language_processor(model_type, tok_config, hf_tok.token_to_id, eos)
            specials = wrapping(model_type, processor or hf_tok.post_processor, ids, start, token_of)
        else:
            specials = family_specials(model_type, ids, hf_config, tok_config, token_of)
    except ValueError as e:
        problems.add(f"{desc}: {e}")
        return None, None, ""
    tok = LibraryTokenizer(hf_tok, specials)
    return tok, tok, desc


def sentencepiece_model(
    folder: Path, model_type: str, hf_config: dict[str, Any], tok_config: dict[str, Any], problems: Problems
) -> tuple[Tokenizer | None, Tokenizer | None, str]:
    """A folder whose only tokenizer file is a SentencePiece model (SPM_FILES)."""
    name = next((n for n in SPM_FILES if has_file(folder, n)), None)
    if name is None:
        return None, None, ""
    if seq2seq.spm_only_problem(model_type, name):  # numbered otherwise than its tokenizer class numbers it
        problems.add(seq2seq.spm_only_problem(model_type, name))
        return None, None, ""
    if model_type in SPM_UNREAD:
        problems.add(f"{name} alone: {SPM_UNREAD[model_type]}; attnlab reads this family's tokenizer.json")
        return None, None, ""
    try:
        tok = SentencePieceModelTokenizer((folder / name).read_bytes(), Specials(), name == FAIRSEQ_SPM)
    except ImportError as e:
        problems.add(str(e))
        return None, None, ""
    except (OSError, RuntimeError) as e:
        problems.add(f"{name} cannot be read as a SentencePiece model ({short_reason(e)})")
        return None, None, ""
    ids = special_ids(folder, model_type, tok.token_id, problems)
    tok.specials = family_specials(model_type, ids, hf_config, tok_config, tok.id_to_token)
    return tok, tok, f"{name} (SentencePiece)"


def tokenizer_at(path: str | os.PathLike[str], problems: Problems, model_type: str = "") -> Tokenizer | None:
    """A tokenizer the user points at: a tokenizer.json file or a folder holding tokenizer files, read as
    `model_type`'s family reads them (else as the folder's config.json says)."""
    path = Path(path).expanduser()
    folder = path if path.is_dir() else path.parent
    if os.path.lexists(path) and not path.is_dir():
        try:
            regular_file(path, f"--tokenizer {str(path)!r}")  # a FIFO or a device: refused, never opened
        except FileRefused as e:
            problems.add(str(e))
            return None
    if path.is_file() and path.name != "tokenizer.json":
        try:  # any file the tokenizers library wrote; its special tokens are not wrapped around the input
            from tokenizers import Tokenizer

            regular_file_size(path, "--tokenizer", MAX_VOCAB_BYTES)
            return LibraryTokenizer(Tokenizer.from_file(str(path)), Specials(description="no special tokens added"))
        except FileRefused as e:
            problems.add(str(e))
            return None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # the tokenizers library's own errors, and its Rust panics
            problems.add(
                f"--tokenizer {str(path)!r} is not a tokenizer.json file or a folder with tokenizer "
                f"files ({limits.cut(library_reason(e), 200)})"
            )
            return None
    if not path.exists():
        problems.add(f"--tokenizer {str(path)!r}: there is nothing at that path")
        return None
    hf_config = read_json_file(folder / "config.json", problems)
    if model_type or "model_type" not in hf_config:  # the model's family decides how its input is wrapped
        hf_config["model_type"] = model_type
    src, _tgt, _desc = folder_tokenizers(folder, hf_config, problems)
    if src is None and not problems:
        problems.add(
            f"--tokenizer {str(path)!r}: no tokenizer.json, vocab.json + merges.txt, vocab.txt or "
            f"SentencePiece model ({', '.join(SPM_FILES)}) there"
        )
    return src


def library_reason(error: BaseException) -> str:
    """The first line of a tokenizers error; a Rust panic's text is not for a teacher."""
    if type(error).__name__ == "PanicException":
        return "the tokenizers library could not parse them"
    text = str(error)
    return text.splitlines()[0] if text else type(error).__name__
