"""GPT-2 (and DistilGPT2): decoder-only, pre-norm with a final LayerNorm, learned positions, tanh-GELU, fused
Conv1D Q/K/V weights stored [in, out]; scale_attn_by_inverse_layer_idx divides layer l's scores by l + 1 too."""

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
    require_value,
    take_lm_head,
)
from attnlab.engine.config import ModelConfig

IGNORABLE = (".attn.bias", ".attn.masked_bias")  # the causal-mask buffers older versions saved


def config_from_hf(hf: HFConfig) -> tuple[ModelConfig, list[str]]:
    require_value(hf, "add_cross_attention", (False,), False, "GPT-2 with cross-attention")
    require_value(hf, "scale_attn_weights", (True,), True, "attention scores are always divided by sqrt(d_k)")
    # reorder_and_upcast_attn only computes Q Kᵀ in float32 with the scale applied first: attnlab's float32
    # arithmetic already is that, so it is accepted as it stands
    d_model = int_field(hf, "n_embd", required=True)
    vocab = int_field(hf, "vocab_size", required=True)
    notes: list[str] = []
    d_ff = int_field(hf, "n_inner", None)
    if d_ff is None:
        d_ff = 4 * d_model
        notes.append(f"d_ff = 4 x n_embd = {d_ff} (config.json has no n_inner)")
    config = decoder_only_config(
        vocab,
        d_model=d_model,
        n_heads=int_field(hf, "n_head", required=True),
        d_ff=d_ff,
        n_decoder_layers=int_field(hf, "n_layer", required=True),
        activation=activation(hf, "activation_function", "gelu_new"),
        layer_norm_eps=float(field(hf, "layer_norm_epsilon", 1e-5)),
        positional="learned",
        tie_output=bool(field(hf, "tie_word_embeddings", True)),
        bias=True,
        logits_bias=False,
        max_len=int_field(hf, "n_positions", 1024),
        attn_scale_inverse_layer=bool(field(hf, "scale_attn_by_inverse_layer_idx", False)),
    )
    return config, notes


def convert_tensors(hf: HFConfig, config: ModelConfig, state_dict: StateDict) -> tuple[ConvertedState, list[str]]:
    t = Tensors(state_dict, ("transformer.",))
    d = config.d_model
    out = {"tgt_embed.weight": t("wte.weight"), "tgt_pos.weight": t("wpe.weight")}
    for i in range(config.n_decoder_layers):
        hf_layer, layer = f"h.{i}", f"decoder.{i}"
        # Conv1D stores [in, out]; Linear wants [out, in]. The transposed VIEWS are kept (no .contiguous()):
        # build_live_model copies every tensor into the module's own contiguous parameters anyway.
        qkv_w = t(f"{hf_layer}.attn.c_attn.weight").T  # Conv1D [d, 3d] -> Linear [3d, d]
        qkv_b = t(f"{hf_layer}.attn.c_attn.bias")  # [3d]
        for j, name in enumerate(("w_q", "w_k", "w_v")):
            out[f"{layer}.self_attn.{name}.weight"] = qkv_w[j * d : (j + 1) * d]
            out[f"{layer}.self_attn.{name}.bias"] = qkv_b[j * d : (j + 1) * d]
        out[f"{layer}.self_attn.w_o.weight"] = t(f"{hf_layer}.attn.c_proj.weight").T
        out[f"{layer}.self_attn.w_o.bias"] = t(f"{hf_layer}.attn.c_proj.bias")
        out[f"{layer}.ffn.lin1.weight"] = t(f"{hf_layer}.mlp.c_fc.weight").T
        out[f"{layer}.ffn.lin1.bias"] = t(f"{hf_layer}.mlp.c_fc.bias")
        out[f"{layer}.ffn.lin2.weight"] = t(f"{hf_layer}.mlp.c_proj.weight").T
        out[f"{layer}.ffn.lin2.bias"] = t(f"{hf_layer}.mlp.c_proj.bias")
        for n, hf_norm in ((1, "ln_1"), (2, "ln_2")):
            out[f"{layer}.norm{n}.weight"] = t(f"{hf_layer}.{hf_norm}.weight")
            out[f"{layer}.norm{n}.bias"] = t(f"{hf_layer}.{hf_norm}.bias")
    out["dec_norm.weight"], out["dec_norm.bias"] = t("ln_f.weight"), t("ln_f.bias")
    take_lm_head(t, config, out)
    return out, leftover_note(t.leftovers(IGNORABLE), "not part of the language model")
