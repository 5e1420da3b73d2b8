"""Random models and the classroom models shipped in resources/ (with a random stand-in while absent)."""

from __future__ import annotations

import dataclasses

from attnlab.checkpoints.bundled_files import BUNDLED, SMALL, bundled_path, stand_in_config
from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.loader import load_checkpoint
from attnlab.checkpoints.words import default_tokenizer
from attnlab.engine.build import build_transformer
from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.tokenizer import Tokenizer

__all__ = ["NO_BUNDLED_NOTICE", "default_tokenizer", "load_bundled", "random_model"]  # default_tokenizer: words.py
NO_BUNDLED_NOTICE = "No bundled model found; showing a randomly initialised one."


def random_model(
    config: ModelConfig | None = None, seed: int = 0, tokenizer: Tokenizer | tuple[Tokenizer, Tokenizer] | None = None
) -> LiveModel:
    """A randomly initialised model, the same for the same seed. The vocabulary sizes come from the tokenizer
    (one Tokenizer for both sides, or a (source, target) pair; default: the built-in word list)."""
    if tokenizer is None:
        tokenizer = default_tokenizer()
    src_tok, tgt_tok = tokenizer if isinstance(tokenizer, tuple) else (tokenizer, tokenizer)
    if not isinstance(src_tok, Tokenizer) or not isinstance(tgt_tok, Tokenizer):
        raise TypeError("tokenizer must be a Tokenizer or a (source, target) pair of Tokenizers")
    config = dataclasses.replace(
        config or ModelConfig(**SMALL), src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size
    )
    if config.share_embeddings and src_tok.vocab_size != tgt_tok.vocab_size:
        config = dataclasses.replace(config, share_embeddings=False)
    module = build_transformer(config, seed=seed)  # a private generator: the caller's random state is untouched
    return LiveModel(module, src_tok, tgt_tok, name=f"random-{config.arch}", metadata={"random": True, "seed": seed})


def load_bundled(name: str = "translation", device: str = "cpu") -> LiveModel:
    """A classroom model from resources/<name>.safetensors. While the file is absent, a small random model
    of the matching architecture stands in (metadata: random, notice); a file that exists but is broken
    raises CheckpointError."""
    if name not in BUNDLED:
        raise CheckpointError(
            f"There is no bundled model called {name!r}; choose one of: "
            + "; ".join(f"{k} ({v})" for k, v in BUNDLED.items())
        )
    path = bundled_path(name)
    if path.is_file():
        return load_checkpoint(path, device=device)
    model = random_model(stand_in_config(name))
    model.name = f"{name} (random stand-in)"
    model.metadata.update(notice=NO_BUNDLED_NOTICE, notices=[NO_BUNDLED_NOTICE])
    return model
