"""What every Hugging Face family converter shares: reading config.json fields, refusing options attnlab cannot
represent (one CheckpointError naming the field), and taking tensors out of a state dict by name."""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from attnlab.checkpoints.errors import CheckpointError, name_list
from attnlab.engine.config import Activation, ModelConfig

if TYPE_CHECKING:  # reading a config.json needs no torch (`attnlab models` lists a cache without it)
    import torch

HFConfig = Mapping[str, Any]  # a parsed config.json
StateDict: TypeAlias = "Mapping[str, torch.Tensor]"  # tensors by name, as the checkpoint saved them
ConvertedState: TypeAlias = "dict[str, torch.Tensor]"  # attnlab-named tensors, for Transformer.load_state_dict

# model_type -> the family module (attnlab.checkpoints.hf.<module>) that converts it
FAMILIES = {
    "gpt2": "gpt2",
    "bert": "bert",
    "roberta": "bert",
    "distilbert": "distilbert",
    "marian": "marian",
    "llama": "llama",
    "qwen2": "llama",
    "mistral": "llama",
    "phi3": "phi3",
    "gemma": "gemma",
    "stablelm": "stablelm",
    "olmo": "olmo",
    "gpt_neox": "gpt_neox",
    "phi": "phi",
    "gptj": "gptj",
    "opt": "opt",
    # the BART family of encoder-decoders (bart.py)
    "bart": "bart",
    "mbart": "bart",
    "pegasus": "bart",
    "qwen3": "qwen3",  # w-norms
    "olmo2": "olmo2",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
    # BERT-like encoders (w-bertish)
    "xlm-roberta": "bert",
    "camembert": "bert",
    "electra": "electra",
    "albert": "albert",
    "deberta-v2": "deberta_v2",  # DeBERTa-v2 and v3: disentangled attention
    "mixtral": "mixtral",  # Mistral with a sparse mixture of experts
    "falcon": "falcon",
    # ---- position bias on the scores (engine/position_bias.py) ----
    "bloom": "bloom",
    "mpnet": "mpnet",
    "t5": "t5",
}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)
# model types attnlab knows and cannot run, with the one reason said instead of the list of supported types
NOT_RUNNABLE = {
    "whisper": "Whisper's text decoder cross-attends to its audio encoder's output (a log-mel spectrogram "
    "through two convolutions and an encoder); attnlab reads text only and has no audio encoder to feed it",
}

# Hugging Face activation names -> attnlab's
ACTIVATIONS: dict[str, Activation] = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "silu": "silu",
    "swish": "silu",
}


def supported_text() -> str:
    return "supported model types: " + ", ".join(SUPPORTED_MODEL_TYPES)


def refuse(field: str, why: str, *, list_types: bool = False) -> CheckpointError:
    """The one error for a config.json attnlab cannot represent, in one line: names the field and why; the
    supported model types only where the type itself is what is refused (`list_types`)."""
    listed = f"; attnlab opens these Hugging Face models: {', '.join(SUPPORTED_MODEL_TYPES)}" if list_types else ""
    return CheckpointError(f"config.json field {field!r}: {why}{listed}")


def field(hf: HFConfig, key: str, default: Any = None, *, required: bool = False) -> Any:
    """hf[key] as config.json has it (any JSON value), or `default` when it is absent or null."""
    if key not in hf or hf[key] is None:
        if required:
            raise refuse(key, "is missing, and the model's sizes cannot be known without it")
        return default
    return hf[key]


@overload
def int_field(hf: HFConfig, key: str, default: int, *, required: bool = False) -> int: ...
@overload
def int_field(hf: HFConfig, key: str, default: None = None, *, required: Literal[True]) -> int: ...
@overload
def int_field(hf: HFConfig, key: str, default: None = None, *, required: bool = False) -> int | None: ...
def int_field(hf: HFConfig, key: str, default: int | None = None, *, required: bool = False) -> int | None:
    """hf[key], which must be a whole number; `default` (None unless given) when absent and not required."""
    value = field(hf, key, default, required=required)
    if value is None and not required:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(key, f"must be a whole number, not {value!r}")
    return value


def required_sizes(hf: HFConfig, keys: Mapping[str, str]) -> dict[str, int]:
    """{attnlab's field: hf[their key]} for sizes config.json must give as whole numbers, read in the order of
    `keys` (the first one missing is the one named)."""
    return {ours: int_field(hf, theirs, required=True) for ours, theirs in keys.items()}


def activation(hf: HFConfig, key: str, default: str | None = None) -> Activation:
    name = field(hf, key, default, required=default is None)
    if name not in ACTIVATIONS:
        raise refuse(key, f"the activation {name!r} is not one attnlab computes (it knows {', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name]


def require_value(hf: HFConfig, key: str, allowed: Container[object], default: object = None, why: str = "") -> None:
    """Refuse unless hf[key] (or its default) is one of `allowed`."""
    value = field(hf, key, default)
    if value not in allowed:
        raise refuse(key, f"{value!r} is not supported{': ' + why if why else ''}")


class Tensors:
    """A state dict read by name under one of several prefixes ("transformer.", "" …), remembering which
    tensors were taken, so leftovers can be reported and missing ones named."""

    def __init__(self, state_dict: Mapping[str, torch.Tensor], prefixes: tuple[str, ...]):
        self.state = state_dict
        self.taken: set[str] = set()
        self.prefix = next((p for p in prefixes if any(k.startswith(p) for k in state_dict)), "")

    def has(self, name: str) -> bool:
        return self.prefix + name in self.state or name in self.state

    def key(self, name: str) -> str:
        """The state dict's key for `name` (with the model's prefix, or a head's name without it)."""
        for key in (self.prefix + name, name):
            if key in self.state:
                return key
        raise CheckpointError(
            f"the weights have no tensor {self.prefix + name!r}; is this folder's config.json "
            f"the one its weights were saved with? ({supported_text()})"
        )

    def __call__(self, name: str) -> torch.Tensor:
        key = self.key(name)
        self.taken.add(key)
        value = self.state[key]
        if not value.is_floating_point():  # int8 / quantized weights: a cast would silently change the model
            raise CheckpointError(
                f"the weights' tensor {key!r} holds {str(value.dtype).removeprefix('torch.')} values; attnlab "
                "reads floating-point weights only (quantized or integer checkpoints are not supported)"
            )
        return value  # in its stored dtype: the loader decides the dtype weights are held in (issue 23)

    def optional(self, name: str) -> torch.Tensor | None:
        return self(name) if self.has(name) else None

    def leftovers(self, ignorable: tuple[str, ...] = ()) -> list[str]:
        """Tensors nobody took, minus buffers that carry no weights (names ending in one of `ignorable`)."""
        return [k for k in self.state if k not in self.taken and not k.endswith(ignorable)]


def take_tied_copy(t: Tensors, name: str, table: torch.Tensor) -> None:
    """A saved copy of a tied matrix (lm_head.weight of a tied model) must be the matrix it is tied to."""
    if not t.has(name):
        return
    import torch

    copy = t(name)
    if copy.shape != table.shape or not torch.equal(copy, table):
        raise refuse(
            "tie_word_embeddings", f"says the output is tied to the embeddings, but {t.key(name)} differs from them"
        )


def leftover_note(names: list[str], what: str) -> list[str]:
    return (
        [f"{len(names)} tensor(s) in the weights are not used by attnlab ({what}): {name_list(names)}"] if names else []
    )


def llama_style_sizes(hf: HFConfig) -> dict[str, int]:
    """The sizes every Llama-style config.json names the same way (hidden_size, num_attention_heads,
    intermediate_size, num_hidden_layers), as decoder_only_config's keywords."""
    return {
        "d_model": int_field(hf, "hidden_size", required=True),
        "n_heads": int_field(hf, "num_attention_heads", required=True),
        "d_ff": int_field(hf, "intermediate_size", required=True),
        "n_decoder_layers": int_field(hf, "num_hidden_layers", required=True),
    }


def decoder_only_config(vocab: int, **family: Any) -> ModelConfig:
    """A Hugging Face causal LM (GPT-2, Llama, Qwen2) as attnlab builds it: decoder-only, one vocabulary,
    pre-norm with a norm after the last layer, token embeddings not scaled; `family` gives the rest
    (n_decoder_layers among it)."""
    return ModelConfig(
        arch="decoder-only",
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        n_encoder_layers=0,
        norm_first=True,
        final_norm=True,
        scale_embedding=False,
        **family,
    )


def encoder_only_config(vocab: int, **family: Any) -> ModelConfig:
    """A BERT-like masked LM (BERT, RoBERTa, DistilBERT) as attnlab builds it: encoder-only, post-norm with no
    final norm, learned positions, a LayerNorm on the embeddings (not scaled), biases everywhere; `family`
    gives the rest (n_encoder_layers among it)."""
    return ModelConfig(
        arch="encoder-only",
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        n_decoder_layers=0,
        norm_first=False,
        final_norm=False,
        positional="learned",
        scale_embedding=False,
        embed_norm=True,
        bias=True,
        **family,
    )


def take_linears(
    t: Tensors, hf_prefix: str, prefix: str, sources: Mapping[str, str], out: ConvertedState, *, bias: bool = True
) -> None:
    """out["<prefix>.<ours>.weight"] = t("<hf_prefix>.<theirs>.weight") for every (ours, theirs) in `sources`,
    and the same for the biases when `bias`."""
    for ours, theirs in sources.items():
        out[f"{prefix}.{ours}.weight"] = t(f"{hf_prefix}.{theirs}.weight")
        if bias:
            out[f"{prefix}.{ours}.bias"] = t(f"{hf_prefix}.{theirs}.bias")


def take_lm_head(t: Tensors, config: ModelConfig, out: ConvertedState, table: str = "tgt_embed.weight") -> None:
    """A causal LM's output matrix: lm_head.weight when untied (it must be there), else the embedding `table`
    it is tied to (a saved copy must equal it)."""
    if not config.tie_output:
        if not t.has("lm_head.weight"):
            raise refuse("tie_word_embeddings", "is false but the weights have no lm_head.weight")
        out["out_proj.weight"] = t("lm_head.weight")
    else:
        take_tied_copy(t, "lm_head.weight", out[table])


def refusal(error: BaseException) -> str:
    """A converter's refusal of a config.json option as one line that names config.json once."""
    text = " ".join(str(error).split()) or type(error).__name__
    while text.startswith("config.json: "):
        text = text.removeprefix("config.json: ")
    return text if text.startswith("config.json") else f"config.json: {text}"
