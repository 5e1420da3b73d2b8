"""Falcon: decoder-only, pre-norm LayerNorm, half-split rotary positions (rope_theta / rope_parameters), GELU MLP,
biases on every linear layer when `bias`, one fused query_key_value projection, and three layer layouts
(transformers' FalconDecoderLayer and FalconAttention._split_heads):

- new_decoder_architecture (Falcon-40B/180B): grouped K/V heads (num_kv_heads); query_key_value's rows are, per
  K/V group, its H / num_kv_heads query heads, then its key head, then its value head; attention and MLP run in
  parallel, each on its own LayerNorm (ln_attn, ln_mlp), or on one (input_layernorm) when
  num_ln_in_parallel_attn is 1.
- multi_query (Falcon-7B): all H query heads, then one key head and one value head; parallel_attn runs attention
  and the MLP side by side on one LayerNorm (input_layernorm).
- neither: per head, its query, key and value rows in turn (H K/V heads).

Without parallel_attn the layer is sequential (input_layernorm, then post_attention_layernorm before the MLP).
ALiBi (alibi: true, Falcon-RW) is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnlab.checkpoints.hf import llama
from attnlab.checkpoints.hf.common import (
    ConvertedState,
    HFConfig,
    StateDict,
    Tensors,
    activation,
    decoder_only_config,
    field,
    int_field,
    leftover_note,
    refuse,
    take_linears,
    take_lm_head,
)
from attnlab.checkpoints.hf.rope import rope_settings
from attnlab.engine.config import ModelConfig

if TYPE_CHECKING:
    import torch


def layout(hf: HFConfig) -> tuple[bool, bool, int]:
    """(new_decoder_architecture, parallel_attn, norms per parallel layer: 2 = ln_attn and ln_mlp, 1 = one)."""
    new = bool(field(hf, "new_decoder_architecture", False))
    parallel = bool(field(hf, "parallel_attn", True))
    n_norms = field(hf, "num_ln_in_parallel_attn")
    if n_norms is None:
        n_norms = 2 if new else 1
    if new and not parallel:
        raise refuse("parallel_attn", "false with new_decoder_architecture: transformers' Falcon cannot run it")
    if new and n_norms not in (1, 2):
        raise refuse("num_ln_in_parallel_attn", f"must be 1 or 2, not {n_norms!r}")
    return new, parallel, n_norms if new else 1


def kv_heads(hf: HFConfig, n_heads: int) -> int:
    """K/V heads: num_kv_heads (new architecture), 1 (multi_query), else one per query head."""
    if field(hf, "new_decoder_architecture", False):
        n_kv = int_field(hf, "num_kv_heads", n_heads)
        if n_kv < 1 or n_heads % n_kv:
            raise refuse("num_kv_heads", f"{n_kv} does not divide num_attention_heads {n_heads}")
        return n_kv
    if field(hf, "multi_query", True):
        return 1
    n_kv = int_field(hf, "num_kv_heads", n_heads)
    if n_kv != n_heads:
        raise refuse("num_kv_heads", f"{n_kv}: without multi_query or new_decoder_architecture each head has its K/V")
    return n_heads


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    if field(hf, "alibi", False):
        raise refuse("alibi", "ALiBi attention biases (Falcon-RW) are not supported here; Falcon with rotary is")
    d_model = int_field(hf, "hidden_size", None) or int_field(hf, "n_embed", required=True)
    n_heads = int_field(hf, "num_attention_heads", required=True)
    if d_model % n_heads:
        raise refuse("num_attention_heads", f"{n_heads} does not divide hidden_size {d_model}")
    new, parallel, n_norms = layout(hf)
    bias = bool(field(hf, "bias", False))
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        d_model=d_model,
        n_heads=n_heads,
        d_ff=int_field(hf, "ffn_hidden_size", None) or 4 * d_model,
        n_decoder_layers=int_field(hf, "num_hidden_layers", required=True),
        activation=activation(hf, "activation", "gelu"),
        layer_norm_eps=float(field(hf, "layer_norm_epsilon", 1e-5)),
        positional="rotary",
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        bias=bias,
        logits_bias=False,
        max_len=int_field(hf, "max_position_embeddings", 2048),
        n_kv_heads=kv_heads(hf, n_heads),
        rotary_layout="half",
        parallel_residual=parallel,
        shared_norm=parallel and n_norms == 1,
        **rope_settings(hf),
    )
    return config, []


def split_qkv(fused: torch.Tensor, hf: HFConfig, config: ModelConfig) -> tuple[torch.Tensor, ...]:
    """query_key_value's weight [rows, d] (or bias [rows]) -> Q [H·dk, …], K and V [H_kv·dk, …], in attnlab's
    head order (each K/V head serves consecutive Q heads), as FalconAttention._split_heads reads the rows."""
    H, n_kv, dk = config.n_heads, config.kv_heads, config.d_head
    rest = fused.shape[1:]  # (d,) for the weight, () for the bias
    if field(hf, "new_decoder_architecture", False):
        group = H // n_kv
        blocks = fused.reshape(n_kv, group + 2, dk, *rest)  # per K/V group: its queries, its key, its value
        q, k, v = blocks[:, :group], blocks[:, group], blocks[:, group + 1]
    elif field(hf, "multi_query", True):
        q, k, v = fused.split((H * dk, dk, dk))  # all queries, then one key head, then one value head
    else:
        heads = fused.reshape(H, 3, dk, *rest)  # per head: query, key, value
        q, k, v = heads[:, 0], heads[:, 1], heads[:, 2]
    return q.reshape(H * dk, *rest), k.reshape(n_kv * dk, *rest), v.reshape(n_kv * dk, *rest)


def take_norm(t: Tensors, source: str, target: str, out: ConvertedState) -> None:
    out[f"{target}.weight"], out[f"{target}.bias"] = t(f"{source}.weight"), t(f"{source}.bias")


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("transformer.",))
    out = {"tgt_embed.weight": t("word_embeddings.weight")}
    bias = config.has_bias("qkv")
    _new, parallel, n_norms = layout(hf)
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"h.{i}", f"decoder.{i}"
        fused = f"{hf_layer}.self_attention.query_key_value"
        parts = {"w_q": 0, "w_k": 1, "w_v": 2}
        weights = split_qkv(t(f"{fused}.weight"), hf, config)
        biases = split_qkv(t(f"{fused}.bias"), hf, config) if bias else None
        for name, j in parts.items():
            out[f"{layer}.self_attn.{name}.weight"] = weights[j]
            if biases is not None:
                out[f"{layer}.self_attn.{name}.bias"] = biases[j]
        take_linears(t, f"{hf_layer}.self_attention", f"{layer}.self_attn", {"w_o": "dense"}, out, bias=bias)
        mlp = {"lin1": "dense_h_to_4h", "lin2": "dense_4h_to_h"}
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", mlp, out, bias=config.has_bias("ffn"))
        if parallel and n_norms == 2:  # attention and MLP each on its own LayerNorm of the same input
            take_norm(t, f"{hf_layer}.ln_attn", f"{layer}.norm1", out)
            take_norm(t, f"{hf_layer}.ln_mlp", f"{layer}.norm2", out)
        elif parallel:  # one LayerNorm feeds both branches: norm 2 is a copy of norm 1
            take_norm(t, f"{hf_layer}.input_layernorm", f"{layer}.norm1", out)
            out[f"{layer}.norm2.weight"] = out[f"{layer}.norm1.weight"]
            out[f"{layer}.norm2.bias"] = out[f"{layer}.norm1.bias"]
        else:
            take_norm(t, f"{hf_layer}.input_layernorm", f"{layer}.norm1", out)
            take_norm(t, f"{hf_layer}.post_attention_layernorm", f"{layer}.norm2", out)
    take_norm(t, "ln_f", "dec_norm", out)
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(llama.IGNORABLE), "not part of the language model")
