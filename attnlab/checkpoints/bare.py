"""A bare torch.nn.Transformer / nn.TransformerEncoder state dict: what the weights cannot say comes from the
user (`ImportSettings`: heads, norm placement, activation, tokenizer) or is assumed, and the run says which.

The weights give d_model, d_ff, the layer counts, biases and the final norms. They do not give the number of
heads (in_proj is one [3d, d] matrix whatever the split), pre- or post-norm, ReLU or GELU, the vocabulary, or
the positional encoding. nn.Transformer itself has no embedding and no output layer: a model that wraps it
usually names them src_embed / tgt_embed / out_proj (attnlab's names) or something with "emb" / "out" in it;
without them, seeded random ones stand in and a notice says that the tokens are arbitrary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import torch

from attnlab.checkpoints.errors import Problems, name_list
from attnlab.engine.config import ACTIVATIONS, Activation, Architecture, ModelConfig, is_activation
from attnlab.engine.tokenizer import Tokenizer


class NNDefaults(TypedDict):
    norm: str
    activation: Activation
    layer_norm_eps: float
    positional: str
    max_len: int


NN_DEFAULTS: NNDefaults = {
    "norm": "post",
    "activation": "relu",
    "layer_norm_eps": 1e-5,
    "positional": "sinusoidal",
    "max_len": 512,
}
_STACK_LAYER = re.compile(r"^(encoder|decoder)\.(\d+)\.")


@dataclass(frozen=True)
class ImportSettings:
    """What a user says about weights that do not say it themselves (CLI flags, the app's dialog)."""

    heads: int | None = None
    norm: str | None = None  # "pre" or "post"
    activation: str | None = None  # "relu" or "gelu"
    tokenizer: str | None = None  # a tokenizer.json file or a Hugging Face folder

    def problems(self) -> list[str]:
        p = []
        if self.heads is not None and self.heads < 1:
            p.append(f"--heads must be at least 1 (got {self.heads})")
        if self.norm not in (None, "pre", "post"):
            p.append(f"--norm must be 'pre' or 'post' (got {self.norm!r})")
        if self.activation not in (None, *ACTIVATIONS):
            p.append(f"--activation must be one of {', '.join(ACTIVATIONS)} (got {self.activation!r})")
        return p


def default_heads(d_model: int) -> int:
    """nn.Transformer's default of 8 heads, or the largest count below it that divides d_model."""
    return next(h for h in (8, 4, 2, 1) if d_model % h == 0)


def layer_indices(tensors: Iterable[str], stack: str) -> list[int]:
    return sorted({int(m.group(2)) for n in tensors if (m := _STACK_LAYER.match(n)) and m.group(1) == stack})


def adopt_wrapper_tensors(
    tensors: dict[str, torch.Tensor], d_model: int, arch: str, notices: list[str]
) -> dict[str, torch.Tensor]:
    """Map a wrapping module's embedding / output tensors onto attnlab's names; drop (and list) the rest."""
    out = {
        n: t
        for n, t in tensors.items()
        if _STACK_LAYER.match(n) or n.split(".")[0] in ("enc_norm", "dec_norm", "src_embed", "tgt_embed", "out_proj")
    }
    loose = {n: t for n, t in tensors.items() if n not in out}
    embeds = [n for n, t in loose.items() if "emb" in n.lower() and t.dim() == 2 and t.shape[1] == d_model]
    sides = (
        ["src_embed", "tgt_embed"]
        if arch == "encoder-decoder"
        else (["src_embed"] if arch == "encoder-only" else ["tgt_embed"])
    )
    if arch == "encoder-decoder" and len(embeds) == 1:
        sides = ["src_embed"]
    for side, name in zip(sides, sorted(embeds, key=lambda n: ("tgt" in n.lower(), n)), strict=False):
        if f"{side}.weight" not in out:
            out[f"{side}.weight"] = loose.pop(name)
    for name in [
        n
        for n in loose
        if n.endswith("weight")
        and loose[n].dim() == 2
        and loose[n].shape[1] == d_model
        and re.search(r"out|generator|lm_head|fc|proj|head", n.lower())
    ][:1]:
        if "out_proj.weight" not in out:
            out["out_proj.weight"] = loose.pop(name)
            bias = name[: -len("weight")] + "bias"
            if bias in loose:
                out["out_proj.bias"] = loose.pop(bias)
    if loose:
        notices.append("Ignored tensors that are not part of nn.Transformer: " + name_list(loose))
    return out


def stand_in(shape: Sequence[int], seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen) * shape[-1] ** -0.5


def _record_assumptions(settings: ImportSettings, chosen: dict[str, object], assumed: dict[str, tuple]) -> None:
    """assumed[field] = (value, where it came from) for what a bare state dict does not say: the `chosen`
    n_heads / norm / activation (given in `settings`, or nn.Transformer's default) and the fixed assumptions."""
    given = {"n_heads": settings.heads, "norm": settings.norm, "activation": settings.activation}
    for field, value in chosen.items():
        assumed[field] = (value, "given" if given[field] else "assumed: nn.Transformer's default")
    assumed["layer_norm_eps"] = (NN_DEFAULTS["layer_norm_eps"], "assumed")
    assumed["positional"] = ("sinusoidal", "assumed")
    assumed["max_len"] = (NN_DEFAULTS["max_len"], "assumed")


def bare_config(
    tensors: dict[str, torch.Tensor],
    settings: ImportSettings,
    vocab_size: int,
    problems: Problems,
    assumed: dict[str, tuple],
) -> ModelConfig | None:
    """The ModelConfig of a state dict in attnlab names; `assumed` gets field -> (value, where it came from)."""
    enc, dec = layer_indices(tensors, "encoder"), layer_indices(tensors, "decoder")
    stack = "encoder" if enc else "decoder"
    probe = tensors.get(f"{stack}.0.self_attn.w_q.weight")
    ffn = tensors.get(f"{stack}.0.ffn.lin1.weight")
    if probe is None or ffn is None:
        problems.add("no attention or feed-forward weights of a first layer were found, so the sizes are unknown")
        return None
    if dec and "decoder.0.cross_attn.w_q.weight" in tensors and not enc:
        problems.add(
            "this is an nn.TransformerDecoder alone: its cross-attention needs an encoder's output, "
            "which the file does not have"
        )
        return None
    d_model, d_ff = int(probe.shape[1]), int(ffn.shape[0])
    arch: Architecture = "encoder-decoder" if enc and dec else ("encoder-only" if enc else "decoder-only")
    heads = settings.heads or default_heads(d_model)
    norm = settings.norm or NN_DEFAULTS["norm"]
    activation = settings.activation or NN_DEFAULTS["activation"]
    if not is_activation(activation):  # bare_parts has reported settings.problems()
        return None
    _record_assumptions(settings, {"n_heads": heads, "norm": norm, "activation": activation}, assumed)
    if d_model % heads:
        problems.add(
            f"d_model {d_model} is not divisible by {heads} heads; choose --heads from "
            + ", ".join(str(h) for h in range(1, d_model + 1) if d_model % h == 0 and h <= 64)
        )
        return None
    return ModelConfig(
        arch=arch,
        src_vocab_size=vocab_size,
        tgt_vocab_size=vocab_size,
        d_model=d_model,
        n_heads=heads,
        d_ff=d_ff,
        n_encoder_layers=len(enc),
        n_decoder_layers=len(dec),
        activation=activation,
        norm_first=norm == "pre",
        final_norm="enc_norm.weight" in tensors or "dec_norm.weight" in tensors,
        layer_norm_eps=NN_DEFAULTS["layer_norm_eps"],
        positional="sinusoidal",
        scale_embedding=True,
        share_embeddings=False,
        tie_output="out_proj.weight" not in tensors,
        bias=f"{stack}.0.self_attn.w_q.bias" in tensors,
        max_len=NN_DEFAULTS["max_len"],
    )


def bare_parts(
    tensors: dict[str, torch.Tensor],
    settings: ImportSettings,
    tokenizer: Tokenizer | None,
    problems: Problems,
    notices: list[str],
) -> tuple[ModelConfig | None, dict[str, torch.Tensor] | None, Tokenizer, dict[str, Any]]:
    """(config, tensors, tokenizer, metadata). `tokenizer` is the user's, or None for the built-in word list."""
    from attnlab.checkpoints.assemble import generic_tokenizer
    from attnlab.checkpoints.words import default_tokenizer

    for p in settings.problems():
        problems.add(p)
    enc, dec = layer_indices(tensors, "encoder"), layer_indices(tensors, "decoder")
    arch = "encoder-decoder" if enc and dec else ("encoder-only" if enc else "decoder-only")
    first = tensors.get(f"{'encoder' if enc else 'decoder'}.0.self_attn.w_q.weight")
    d_model = int(first.shape[1]) if first is not None else 0
    tensors = adopt_wrapper_tensors(tensors, d_model, arch, notices) if d_model else tensors
    embed = tensors.get("src_embed.weight", tensors.get("tgt_embed.weight"))
    tok = tokenizer
    if tok is None:  # words for random embeddings; tok4, tok5, … for the file's own
        tok = default_tokenizer() if embed is None else generic_tokenizer(int(embed.shape[0]))
    vocab = int(embed.shape[0]) if embed is not None else tok.vocab_size
    assumed: dict[str, tuple] = {}
    config = bare_config(tensors, settings, vocab, problems, assumed)
    if config is None:
        return None, None, tok, {}
    if tok.vocab_size > vocab:
        problems.add(f"the tokenizer has {tok.vocab_size} tokens but the embedding only {vocab} rows")
    sides = [s for s, present in (("src_embed", config.has_encoder), ("tgt_embed", config.has_decoder)) if present]
    missing = [s for s in sides if f"{s}.weight" not in tensors]
    for seed, side in enumerate(missing):
        tensors[f"{side}.weight"] = stand_in((vocab, config.d_model), seed)  # [V, d]
    banner = ""
    if missing:
        banner = (
            "The file has no token embedding (nn.Transformer has none), so seeded random embeddings "
            "stand in: the layers' weights are yours, but which token is which is arbitrary."
        )
        notices.append(banner)
    if tokenizer is None and embed is not None:
        notices.append(
            "No tokenizer was given, so the tokens are named tok4, tok5, …; pass --tokenizer for the model's own."
        )
    said = "Settings the weights do not record: " + "; ".join(
        f"{k} {value} ({source})" for k, (value, source) in assumed.items()
    )
    notices.append(said)
    metadata = {
        "source": "bare nn.Transformer state dict",
        "run_notices": [said],
        "settings": {k: {"value": value, "source": source.split(":")[0]} for k, (value, source) in assumed.items()},
    }
    if banner:
        metadata["notice"] = banner
    return config, tensors, tok, metadata
