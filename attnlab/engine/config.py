"""ModelConfig: what a checkpoint fixes. RunOptions (options.py) holds what can change at run time."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Literal, TypeGuard

from attnlab import limits
from attnlab.engine import mechanisms

Architecture = Literal["encoder-decoder", "decoder-only", "encoder-only"]
Activation = Literal["relu", "gelu", "gelu_tanh", "silu"]
Positional = Literal["sinusoidal", "learned", "rotary", "none"]
NormKind = Literal["layernorm", "rmsnorm"]
FFNKind = Literal["plain", "gated"]
RotaryLayout = Literal["interleaved", "half"]
SinusoidalLayout = Literal["interleaved", "marian"]
RopeScaling = Literal["none", "linear", "dynamic", "yarn", "llama3"]
QKNorm = Literal["none", "head", "whole"]  # w-norms: QK-norm (engine/qk_norm.py)
SublayerNorm = Literal["input", "output", "sandwich"]  # w-norms: where a layer's norms sit (engine/context.py)
PositionBias = Literal["none", "alibi", "t5"]  # an additive per-head bias on the scores (engine/position_bias.py)

ARCHITECTURES = ("encoder-decoder", "decoder-only", "encoder-only")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
POSITIONALS = ("sinusoidal", "learned", "rotary", "none")
NORM_KINDS = ("layernorm", "rmsnorm")
FFN_KINDS = ("plain", "gated")
ROTARY_LAYOUTS = ("interleaved", "half")
SINUSOIDAL_LAYOUTS = ("interleaved", "marian")
ROPE_SCALINGS = ("none", "linear", "dynamic", "yarn", "llama3")
QK_NORMS = ("none", "head", "whole")
SUBLAYER_NORMS = ("input", "output", "sandwich")
POSITION_BIASES = ("none", "alibi", "t5")
# (field, allowed values) for every string field with a fixed set of values
CHOICES = (
    ("arch", ARCHITECTURES),
    ("activation", ACTIVATIONS),
    ("positional", POSITIONALS),
    ("norm", NORM_KINDS),
    ("ffn", FFN_KINDS),
    ("rotary_layout", ROTARY_LAYOUTS),
    ("sinusoidal_layout", SINUSOIDAL_LAYOUTS),
    ("rope_scaling", ROPE_SCALINGS),
    ("qk_norm", QK_NORMS),
    ("sublayer_norm", SUBLAYER_NORMS),
    ("position_bias", POSITION_BIASES),
)


def is_activation(value: object) -> TypeGuard[Activation]:
    """Whether a value read from outside (a flag, a file) names an activation ModelConfig accepts."""
    return value in ACTIVATIONS


class ConfigError(ValueError):
    """A configuration that cannot describe a working model; the message lists every problem."""


def _has_type(value: object, annotation: object) -> bool:
    """Does a field value match its (string) annotation? bool is not accepted as int, ints are as floats."""
    if annotation == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation == "bool":
        return isinstance(value, bool)
    if annotation == "bool | None":
        return value is None or isinstance(value, bool)
    return isinstance(value, str)  # the Literal[...] aliases


@dataclass(frozen=True)
class ModelConfig:
    arch: Architecture = "encoder-decoder"
    src_vocab_size: int = 1000  # unused by decoder-only models
    tgt_vocab_size: int = 1000  # unused by encoder-only models
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    activation: Activation = "relu"
    norm_first: bool = False  # the placement the weights were trained with: False = post-norm (2017 paper)
    final_norm: bool = False  # a LayerNorm after the last layer of each stack (nn.Transformer has one)
    layer_norm_eps: float = 1e-5
    positional: Positional = "sinusoidal"
    scale_embedding: bool = True  # multiply token embeddings by sqrt(d_model)
    share_embeddings: bool = False  # encoder and decoder use one embedding matrix (needs equal vocab sizes)
    tie_output: bool = True  # the output projection reuses the decoder's (or encoder's) embedding matrix
    bias: bool = True  # the default for every linear layer's bias (each may be overridden below)
    max_len: int = 256
    # ---- what imported architectures add; the defaults keep the models above exactly as they were ----------
    norm: NormKind = "layernorm"  # "rmsnorm": x / sqrt(mean(x^2) + eps) * gamma (Llama, Qwen2)
    norm_bias: bool = True  # LayerNorms have a bias beta (RMSNorm never has one)
    norm_affine: bool = True  # False: the norms learn no gamma (OLMo's non-parametric LayerNorm; gamma stays 1)
    ffn: FFNKind = "plain"  # "gated": down(act(gate(x)) * up(x)) (SwiGLU with silu)
    n_kv_heads: int = 0  # grouped-query attention: K/V heads (0 = as many as Q heads)
    rotary_layout: RotaryLayout = "interleaved"  # pairs (2i, 2i+1), or "half": (i, i + dk/2) as HF Llama
    rope_theta: float = 10000.0  # rotary base
    sinusoidal_layout: SinusoidalLayout = "interleaved"  # sin/cos alternating, or "marian": sines then cosines
    qkv_bias: bool | None = None  # None: as `bias`
    attn_out_bias: bool | None = None  # W_O's bias; None: as `bias`
    ffn_bias: bool | None = None  # None: as `bias`
    logits_bias: bool | None = None  # a bias on the logits; None: `bias` for an untied output, none when tied
    embed_norm: bool = False  # a LayerNorm on each side's input embeddings (BERT, RoBERTa, DistilBERT)
    type_vocab_size: int = 0  # token-type (segment) embeddings; every token of one sentence has type 0
    pos_offset: int = 0  # learned positions start at this row of the table (RoBERTa: padding_idx + 1 = 2)
    output_head: bool = False  # dense + activation + LayerNorm before the output projection (BERT's MLM head)
    # rotary scaling for long contexts (Llama-3.1/3.2, Qwen2.5): how the inverse frequencies theta^(-2i/dk) are
    # changed (positional.rotary_inv_freq has the arithmetic, as transformers' modeling_rope_utils computes it)
    rope_scaling: RopeScaling = "none"
    rope_factor: float = 1.0  # s: the context stretch
    rope_original_max_len: int = 0  # N: the pre-training length (llama3, yarn)
    rope_low_freq_factor: float = 1.0  # llama3
    rope_high_freq_factor: float = 4.0  # llama3
    rope_beta_fast: float = 32.0  # yarn's ramp, in rotations
    rope_beta_slow: float = 1.0
    rope_truncate: bool = True  # yarn: the ramp's ends rounded to whole dimensions
    rope_attention_factor: float = 1.0  # yarn: cos and sin multiplied by it (so q·k by its square)
    # GPT-2's scale_attn_by_inverse_layer_idx: layer l's scores are also divided by l + 1
    attn_scale_inverse_layer: bool = False
    rotary_fraction: float = 1.0  # partial rotary (StableLM): only the first int(fraction · dk) dims turn
    parallel_residual: bool = False  # GPT-NeoX: y = x + Attn(norm1(x)) + FFN(norm2(x)), both from the same x
    shared_norm: bool = False  # Phi: norm 2 holds the same weights as norm 1 (one LayerNorm feeds both branches)
    sliding_window: int = 0  # Mistral: decoder query i reads only keys j with i - j < W (0: every earlier key)
    # a LoRA adapter on the weights (checkpoints/adapters.py): the first layer it changes in run order ("dec.2"),
    # "all" when it changes something before the layers (an embedding), "" when no adapter is open
    adapted_from: str = ""
    # ---- w-norms: QK-norm and the norm on each sub-layer's output --------------------------------------------
    # QK-norm: an RMSNorm (eps layer_norm_eps, its own γ) on the projected Q and K, before rotary positions:
    # "head" over each trained head's d_k numbers (Qwen3, Gemma 3), "whole" over all of Q (d) and of K (OLMo-2)
    qk_norm: QKNorm = "none"
    # "input": norm1/norm2 placed by norm_first (pre: x + f(norm(x)); post: norm(x + f(x)));
    # "output" (OLMo-2): x + norm(f(x)), the norm on the sub-layer's output before the residual add (no pre-norm);
    # "sandwich" (Gemma 2): x + post_norm(f(norm(x))), a second norm per sub-layer on its output
    sublayer_norm: SublayerNorm = "input"
    # Gemma 2: scores divided by √query_pre_attn_scalar instead of √d_k (0: √d_k), soft-capped by
    # cap · tanh(x / cap) before the mask (0: not capped), logits capped the same way; every p-th decoder layer
    # (index + 1 divisible by p) attends globally, the others through sliding_window (0: every layer the same)
    query_scale_dim: float = 0.0
    attn_softcap: float = 0.0
    final_softcap: float = 0.0
    sliding_window_pattern: int = 0
    # Gemma 3: the rotary base of the local (sliding-window) layers, plain rotary without rope_scaling (0: the
    # same rotary as every other layer)
    rope_local_theta: float = 0.0
    # ---- BERT-like encoders (w-bertish) -------------------------------------------------------------------
    # ALBERT / ELECTRA factorised embedding: the token, position and token-type tables and the embedding norm are
    # embed_dim wide, then a linear layer maps LayerNorm(sum) to d_model (0: d_model wide, no projection)
    embed_dim: int = 0
    share_layers: bool = False  # ALBERT: every encoder layer holds the same one set of weights
    replaced_head: bool = False  # ELECTRA's discriminator: dense, activation, dense -> one "replaced?" logit a token
    # ---- DeBERTa-v2/v3's disentangled attention (engine/disentangled.py); "" keeps every model above as it was ----
    # the position terms added to each encoder score: "c2p", "p2c" or "c2p|p2c" (config.json pos_att_type)
    rel_terms: str = ""
    rel_span: int = 0  # k: relative distances are clamped to [-k, k - 1]; the table has 2k rows
    rel_buckets: int = 0  # position_buckets: distances past k/2 are log-bucketed (0: not bucketed)
    rel_max_distance: int = 0  # max_relative_positions: the distance the last log bucket reaches
    rel_norm: bool = False  # norm_rel_ebd "layer_norm": the table passes through its own LayerNorm
    rel_share_key: bool = False  # share_att_key: the position projections are W_Q and W_K themselves
    # ---- BERT's relative_key / relative_key_query (engine/relative_key.py); "" keeps every model above as it was --
    rel_key_terms: str = ""  # "key": + Q·R(i − j); "key_query": + Q·R(i − j) + K·R(i − j) (no absolute positions)
    rel_key_span: int = 0  # M (max_position_embeddings): each layer's distance table has 2M − 1 rows, d_k wide
    # ---- w-headdim: a head size of its own (Qwen3, Gemma, Mistral-Nemo: head_dim x n_heads != d_model) ----------
    # W_Q: d -> H·d_k, W_K/W_V: d -> H_kv·d_k, W_O: H·d_k -> d (0: d_k = d_model / n_heads, as every model above)
    head_dim: int = 0

    @property
    def disentangled(self) -> tuple[str, ...]:
        """DeBERTa's position terms of this model, in the order they are added: () for every other model."""
        return tuple(term for term in ("c2p", "p2c") if term in self.rel_terms.split("|"))

    # Mixtral's sparse mixture of experts (engine/moe.py): every FFN is n_experts gated experts and a router that
    # sends each token to experts_per_token of them (n_experts 0: one dense FFN)
    n_experts: int = 0
    experts_per_token: int = 2
    # ---- position bias: B[h, i, j] added to the scaled scores of self-attention (engine/position_bias.py) ----
    position_bias: PositionBias = "none"  # "alibi": B = m_h · j (BLOOM); "t5": learned per bucket of j − i
    relative_buckets: int = 32  # "t5": buckets of the learned table (half exact distances, half logarithmic)
    relative_max_distance: int = 128  # "t5": distances from this on share the last bucket
    # ---- T5 (w-alibi): trained without ÷√dₖ; a tied output scaled by d_model^-0.5 before the projection ----
    trained_scale: bool = True  # False: the scores were never divided by √dₖ (the ÷√dₖ toggle cannot add it)
    output_rescale: bool = False  # the decoder's output × d_model^-0.5 before the (tied) projection

    @property
    def d_head(self) -> int:
        """d_k of a trained head: head_dim when set, else d_model / n_heads."""
        return self.head_dim or self.d_model // self.n_heads

    @property
    def attn_width(self) -> int:
        """H·d_k: how wide the trained Q (and the concatenated heads W_O reads) are; d_model unless head_dim is set."""
        return self.n_heads * self.head_dim if self.head_dim else self.d_model

    def rotary_dims(self, d_head: int) -> int:
        """How many dimensions of a head of `d_head` rotary positions turn (the first ones; all but partial)."""
        return int(d_head * self.rotary_fraction)

    @property
    def score_scale_factor(self) -> float:
        """What the scores are divided by besides √d_k: √(query_pre_attn_scalar / d_k) (Gemma 2), else 1."""
        return math.sqrt(self.query_scale_dim / self.d_head) if self.query_scale_dim else 1.0

    @property
    def embed_width(self) -> int:
        """How wide the embedding tables are: embed_dim when factorised (ALBERT, ELECTRA), else d_model."""
        return self.embed_dim or self.d_model

    @property
    def kv_heads(self) -> int:
        """K/V heads as trained (n_kv_heads, or n_heads when that is 0)."""
        return self.n_kv_heads or self.n_heads

    def has_bias(self, part: str) -> bool:
        """Whether a linear part has a bias: "qkv", "attn_out", "ffn" or "logits"."""
        value = getattr(self, f"{part}_bias")
        if value is not None:
            return value
        return self.bias and not (part == "logits" and self.tie_output)

    @property
    def adds_position_table(self) -> bool:
        """Whether the inputs get a positional table added (sinusoidal or learned); rotary positions rotate Q
        and K inside attention instead, and "none" has no positions at all."""
        return self.positional in ("sinusoidal", "learned")

    @property
    def positions_kind(self) -> str:
        """Where the positions come from: "relative" for DeBERTa's disentangled terms, the position bias ("alibi",
        "t5") when the model has one, else `positional`."""
        if self.disentangled:
            return "relative"
        if self.rel_key_terms:  # BERT's relative_key(_query)
            return "relative_key"
        return self.position_bias if self.position_bias != "none" else self.positional

    @property
    def has_encoder(self) -> bool:
        return self.arch != "decoder-only"

    @property
    def has_decoder(self) -> bool:
        return self.arch != "encoder-only"

    @property
    def out_vocab_size(self) -> int:
        return self.tgt_vocab_size if self.has_decoder else self.src_vocab_size

    def problems(self) -> list[str]:
        """Every reason this config cannot build a model (empty when it is fine)."""
        p: list[str] = []
        wrong_types = [f.name for f in dataclasses.fields(self) if not _has_type(getattr(self, f.name), f.type)]
        if wrong_types:  # arithmetic below would raise on these; report them instead
            return [
                f"{name} has the wrong type ({type(value).__name__}: {limits.excerpt(value)})"
                for name in wrong_types
                for value in [getattr(self, name)]
            ]
        for name, allowed in CHOICES:
            if getattr(self, name) not in allowed:
                p.append(f"{name} must be one of {allowed}, not {limits.excerpt(getattr(self, name))}")
        for name in ("d_model", "n_heads", "d_ff", "max_len", "src_vocab_size", "tgt_vocab_size"):
            if int(getattr(self, name)) < 1:
                p.append(f"{name} must be at least 1 (got {getattr(self, name)})")
        for name in ("n_kv_heads", "type_vocab_size", "pos_offset", "sliding_window", "sliding_window_pattern"):
            if getattr(self, name) < 0:
                p.append(f"{name} must be 0 or more (got {getattr(self, name)})")
        too_big = self.size_problems()
        if too_big:  # checked before anything is allocated; the arithmetic below stays cheap
            return p + too_big
        specials = 2 if self.arch == "encoder-only" else 1
        if 1 <= self.max_len <= specials:
            p.append(
                f"max_len {self.max_len} leaves no room for a word: this {self.arch} model adds {specials} "
                f"special token{'s' if specials > 1 else ''} to every input"
            )
        if self.n_kv_heads and self.n_heads >= 1 and self.n_heads % self.n_kv_heads:
            p.append(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if not (self.rope_theta > 0) or self.rope_theta == float("inf"):
            p.append(f"rope_theta must be a positive number (got {self.rope_theta})")
        p += self.rope_problems()
        for name in ("query_scale_dim", "final_softcap", "rope_local_theta"):  # attn_softcap: mechanisms.py
            if not 0 <= getattr(self, name) < float("inf"):
                p.append(f"{name} must be 0 or a positive number (got {getattr(self, name)})")
        if self.head_dim < 0:
            p.append(f"head_dim must be 0 or more (got {self.head_dim})")
        elif self.n_heads >= 1 and not self.head_dim and self.d_model % self.n_heads:
            p.append(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not 0 < self.rotary_fraction <= 1:
            p.append(f"rotary_fraction must be more than 0 and at most 1 (got {self.rotary_fraction})")
        elif self.positional == "rotary" and self.n_heads >= 1 and self.rotary_dims(self.d_head) % 2:
            p.append(
                f"rotary encoding needs an even number of rotated dimensions; "
                f"{self.rotary_dims(self.d_head)} of a head of {self.d_head} turn"
            )
        p += self.bertish_problems()
        p += mechanisms.problems(self)  # each attention mechanism's own fields (engine/mechanisms.py)
        if self.parallel_residual and not self.norm_first:
            p.append("parallel_residual needs norm_first (both sub-layers read the normed layer input)")
        if self.has_encoder and self.n_encoder_layers < 1:
            p.append(f"{self.arch} needs at least one encoder layer")
        if self.has_decoder and self.n_decoder_layers < 1:
            p.append(f"{self.arch} needs at least one decoder layer")
        if self.share_embeddings and self.arch == "encoder-decoder" and self.src_vocab_size != self.tgt_vocab_size:
            p.append("share_embeddings needs src_vocab_size == tgt_vocab_size")
        if not (0 < self.layer_norm_eps < 1):
            p.append(f"layer_norm_eps must be a small positive number (got {self.layer_norm_eps})")
        return p + self.moe_problems()

    def moe_problems(self) -> list[str]:
        """What is wrong with the mixture-of-experts fields (empty when nothing, or with no experts)."""
        if self.n_experts == 0:
            return []
        if self.n_experts < 0:
            return [f"n_experts must be 0 or more (got {self.n_experts})"]
        p = []
        if not 1 <= self.experts_per_token <= self.n_experts:
            p.append(f"experts_per_token must be 1 to n_experts {self.n_experts} (got {self.experts_per_token})")
        if self.ffn != "gated":
            p.append("a mixture of experts needs ffn 'gated' (its experts are SwiGLU networks)")
        return p

    def bertish_problems(self) -> list[str]:
        """What is wrong with the factorised embedding, shared layers and discriminator head fields."""
        p = [f"embed_dim must be 0 or more (got {self.embed_dim})"] if self.embed_dim < 0 else []
        if self.embed_dim > limits.MAX_D_MODEL:
            p.append(f"embed_dim {self.embed_dim:,} is more than attnlab handles (at most {limits.MAX_D_MODEL:,})")
        for name in ("embed_dim", "share_layers", "replaced_head"):
            if getattr(self, name) and self.arch != "encoder-only":
                p.append(f"{name} needs an encoder-only model")
        if self.replaced_head and self.output_head:
            p.append("replaced_head and output_head are two different output heads: one model has one")
        return p

    def rope_problems(self) -> list[str]:
        """What is wrong with the rotary scaling fields (empty when nothing)."""
        if self.rope_scaling == "none":
            return []
        p: list[str] = []
        finite = ("rope_factor", "rope_low_freq_factor", "rope_high_freq_factor", "rope_attention_factor")
        for name in (*finite, "rope_beta_fast", "rope_beta_slow"):
            value = getattr(self, name)
            if not (0 < value < float("inf")):
                p.append(f"{name} must be a positive number (got {value})")
        if self.rope_scaling in ("llama3", "yarn") and self.rope_original_max_len < 1:
            p.append(f"rope_scaling {self.rope_scaling!r} needs rope_original_max_len of at least 1")
        if self.rope_scaling == "llama3" and not self.rope_high_freq_factor > self.rope_low_freq_factor:
            p.append("rope_high_freq_factor must be more than rope_low_freq_factor")
        return p

    def size_problems(self) -> list[str]:
        """Sizes over attnlab's caps (attnlab/limits.py), each naming its field; checked before building."""
        caps = (
            ("src_vocab_size", limits.MAX_VOCAB),
            ("tgt_vocab_size", limits.MAX_VOCAB),
            ("d_model", limits.MAX_D_MODEL),
            ("d_ff", limits.MAX_D_FF),
            ("n_heads", limits.MAX_HEADS),
            ("head_dim", limits.MAX_D_MODEL),  # w-headdim
            ("n_encoder_layers", limits.MAX_LAYERS),
            ("n_decoder_layers", limits.MAX_LAYERS),
            ("max_len", limits.MAX_LEN),
        )
        p = [
            f"{name} {getattr(self, name):,} is more than attnlab handles (at most {cap:,})"
            for name, cap in caps
            if getattr(self, name) > cap
        ]
        if p:
            return p
        sinusoid = self.positional == "sinusoidal"  # only this encoding builds a [max_len, d] table (issue 23)
        if sinusoid and self.max_len * self.d_model > limits.MAX_POSITION_TABLE:
            p.append(
                f"max_len {self.max_len:,} x d_model {self.d_model:,} positions table is more than attnlab "
                f"builds (at most {limits.MAX_POSITION_TABLE:,} cells)"
            )
        n = self.parameter_count()
        if n > limits.MAX_PARAMETERS:
            p.append(
                f"these sizes make {n:,} parameters, more than attnlab handles (at most {limits.MAX_PARAMETERS:,})"
            )
        return p

    def parameter_count(self) -> int:
        """Parameters a model of this config has (counted from the sizes; nothing is built)."""
        d, f, b = self.d_model, self.d_ff, int(self.bias)
        a, kv = (self.attn_width, self.kv_heads * self.d_head) if self.n_heads >= 1 else (d, d)  # H·d_k, H_kv·d_k
        attention = 2 * d * (a + kv) + b * (a + 2 * kv + d)  # W_Q, W_O: d x H·d_k; W_K, W_V: d x H_kv·d_k
        ffn = d * f + b * f + f * d + b * d
        if self.n_experts > 0:  # Mixtral: n_experts gated experts (three matrices each) and the router
            ffn = self.n_experts * 3 * d * f + self.n_experts * d
        norms = 2 * d
        enc_layers = 1 if self.share_layers else self.n_encoder_layers  # ALBERT: one set of weights
        enc = enc_layers * (attention + ffn + 2 * norms) if self.has_encoder else 0
        dec = 0
        if self.has_decoder:
            cross = attention + norms if self.has_encoder else 0
            dec = self.n_decoder_layers * (attention + ffn + 2 * norms + cross)
        e = self.embed_width  # the tables' width; a factorised embedding adds its e -> d map
        embeddings = self.src_vocab_size * e + (e * d + d if self.embed_dim else 0) if self.has_encoder else 0
        if self.has_decoder and not (self.share_embeddings and self.has_encoder):
            embeddings += self.tgt_vocab_size * d
        positions = (
            self.max_len * e * (int(self.has_encoder) + int(self.has_decoder)) if self.positional == "learned" else 0
        )
        final = norms * (int(self.has_encoder) + int(self.has_decoder)) if self.final_norm else 0
        out = 0 if self.tie_output else self.out_vocab_size * d + b * self.out_vocab_size
        return enc + dec + embeddings + positions + final + out + mechanisms.parameter_count(self)

    def validate(self) -> ModelConfig:
        problems = self.problems()
        if problems:
            raise ConfigError("Invalid model configuration: " + "; ".join(problems))
        return self

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Unknown config fields: {limits.cut(', '.join(map(limits.excerpt, unknown)), 300)}")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> ModelConfig:
        try:
            data = limits.loads_bounded(text, "the config", limits.MAX_CONFIG_CHARS)
        except ValueError as e:
            raise ConfigError(str(e)) from e
        if not isinstance(data, dict):
            raise ConfigError("config JSON must be an object")
        return cls.from_dict(data)
