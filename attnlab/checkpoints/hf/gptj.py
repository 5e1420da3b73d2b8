"""GPT-J: decoder-only; attention and the MLP side by side on one LayerNorm of the layer input (as Phi),
interleaved partial rotary on the first rotary_dim dimensions of each head (pairs 2i, 2i+1), no biases on
Q/K/V/out, biases on the MLP and on the logits, tanh-GELU, a final LayerNorm."""

from __future__ import annotations

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
)
from attnlab.engine.config import ModelConfig

IGNORABLE = (".attn.bias", ".attn.masked_bias", "embed_positions")  # buffers older versions saved


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    d_model, n_heads = int_field(hf, "n_embd", required=True), int_field(hf, "n_head", required=True)
    if n_heads < 1 or d_model % n_heads:
        raise refuse("n_head", f"n_embd {d_model} is not divisible by n_head {n_heads}")
    d_head = d_model // n_heads
    rotary_dim = int_field(hf, "rotary_dim", d_head)  # null: the whole head turns
    if not 0 < rotary_dim <= d_head or rotary_dim % 2:
        raise refuse("rotary_dim", f"{rotary_dim} must be an even number of dimensions within a head of {d_head}")
    notes: list[str] = []
    d_ff = int_field(hf, "n_inner", None)
    if d_ff is None:
        d_ff = 4 * d_model
        notes.append(f"d_ff = 4 x n_embd = {d_ff} (config.json has no n_inner)")
    config = decoder_only_config(
        int_field(hf, "vocab_size", required=True),
        d_model=d_model,
        n_heads=n_heads,
        d_ff=d_ff,
        n_decoder_layers=int_field(hf, "n_layer", required=True),
        activation=activation(hf, "activation_function", "gelu_new"),
        layer_norm_eps=float(field(hf, "layer_norm_epsilon", 1e-5)),
        positional="rotary",
        tie_output=bool(field(hf, "tie_word_embeddings", False)),
        bias=True,
        qkv_bias=False,
        attn_out_bias=False,
        max_len=int_field(hf, "n_positions", 2048),
        rotary_layout="interleaved",
        rotary_fraction=rotary_dim / d_head,
        parallel_residual=True,
        shared_norm=True,
    )
    return config, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("transformer.",))
    out = {"tgt_embed.weight": t("wte.weight")}
    qkvo = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"h.{i}", f"decoder.{i}"
        take_linears(t, f"{hf_layer}.attn", f"{layer}.self_attn", qkvo, out, bias=False)
        take_linears(t, f"{hf_layer}.mlp", f"{layer}.ffn", {"lin1": "fc_in", "lin2": "fc_out"}, out)
        take_linears(t, hf_layer, layer, {"norm1": "ln_1"}, out)
        out[f"{layer}.norm2.weight"] = out[f"{layer}.norm1.weight"]  # one LayerNorm feeds both branches
        out[f"{layer}.norm2.bias"] = out[f"{layer}.norm1.bias"]
    out["dec_norm.weight"], out["dec_norm.bias"] = t("ln_f.weight"), t("ln_f.bias")
    if not config.tie_output:
        out["out_proj.weight"], out["out_proj.bias"] = t("lm_head.weight"), t("lm_head.bias")
    return out, leftover_note(t.leftovers(IGNORABLE), "not part of the language model")
