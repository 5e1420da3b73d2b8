"""Tiny bitsandbytes-quantized Hugging Face folders, written in the tests by transformers' own `save_pretrained`
of a model that transformers quantized with bitsandbytes on the CPU (never downloaded): a random Llama saved in
float32 ("original"), then loaded with each BitsAndBytesConfig and saved again, as a person's folder is made."""

from __future__ import annotations

from pathlib import Path

import torch

SCHEMES = {  # folder name -> BitsAndBytesConfig keywords
    "nf4": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
    "nf4-double": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True},
    "fp4": {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4"},
    "fp4-double": {"load_in_4bit": True, "bnb_4bit_quant_type": "fp4", "bnb_4bit_use_double_quant": True},
    "int8": {"load_in_8bit": True},
}
IDS = [1, 17, 3, 60, 42, 7, 9, 33]
INTERMEDIATE = 128  # every row a whole number of 64-weight blocks (see test_quantized_bnb's odd-width case)


def original_folder(root: Path, dtype: torch.dtype = torch.float32, intermediate: int = INTERMEDIATE) -> Path:
    """A random tiny Llama (weights spread wider than HF's init, so 4 bits visibly move them), saved."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=intermediate,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.endswith("norm.weight"):
                p.normal_(0.0, 0.3)
    folder = root / f"original-{str(dtype).removeprefix('torch.')}-{intermediate}"
    model.to(dtype).save_pretrained(folder)
    return folder


def quantized_folder(original: Path, root: Path, scheme: str) -> Path:
    """`original` quantized by transformers + bitsandbytes (CPU) with SCHEMES[scheme], saved as transformers saves
    it; the config's _name_or_path is the original's folder."""
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    model = AutoModelForCausalLM.from_pretrained(
        original, quantization_config=BitsAndBytesConfig(**SCHEMES[scheme]), device_map="cpu"
    )
    folder = root / f"{scheme}-{original.name}"
    model.save_pretrained(folder)
    return folder


def transformers_quantized(folder: Path) -> torch.nn.Module:
    """The folder as transformers loads it (bitsandbytes layers holding the packed weights)."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, device_map="cpu").eval()


def bnb_dequantized(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """checkpoint weight name -> bitsandbytes' own dequantization of every quantized linear weight of `model`
    (transformers' dequantize_bnb_weight: bitsandbytes.functional.dequantize_4bit / int8_vectorwise_dequant)."""
    import bitsandbytes as bnb
    from transformers.integrations.bitsandbytes import dequantize_bnb_weight

    out = {}
    for name, module in model.named_modules():
        if isinstance(module, (bnb.nn.Linear4bit, bnb.nn.Linear8bitLt)):
            state = getattr(module, "state", None)
            out[f"{name}.weight"] = dequantize_bnb_weight(module.weight, state)
    return out
