"""Which quantized Hugging Face folders attnlab opens, from config.json alone (no torch: `attnlab models` lists a
cache with it): bitsandbytes, GPTQ and AWQ are dequantized on load (quantized.py), every other method is refused
in one line naming it."""

from __future__ import annotations

from typing import Any

from attnlab import limits

GPTQ_BITS = (2, 4, 8)
GPTQ_FORMATS = ("gptq", "gptq_v2")
DEQUANTIZED_METHODS = ("bitsandbytes", "gptq", "awq")
METHOD_NAMES = {  # quant_method -> how people write it
    "gptq": "GPTQ",
    "awq": "AWQ",
    "aqlm": "AQLM",
    "quanto": "Quanto",
    "eetq": "EETQ",
    "hqq": "HQQ",
    "compressed-tensors": "compressed-tensors",
    "fbgemm_fp8": "FBGEMM FP8",
    "fp8": "FP8",
    "torchao": "torchao",
    "bitnet": "BitNet",
    "vptq": "VPTQ",
    "higgs": "HIGGS",
    "spqr": "SpQR",
    "mxfp4": "MXFP4",
    "auto-round": "AutoRound",
    "gguf": "GGUF",
}


def quant_method(hf_config: dict[str, Any]) -> str | None:
    """config.json's quantization_config.quant_method (lower case), "bitsandbytes" for an older folder that only
    says load_in_4bit / load_in_8bit, None when the folder is not quantized."""
    qc = hf_config.get("quantization_config")
    if qc is None:
        return None
    if not isinstance(qc, dict):
        return "?"
    method = qc.get("quant_method")
    if method is None and (qc.get("load_in_4bit") or qc.get("load_in_8bit")):
        return "bitsandbytes"
    return str(method).lower() if isinstance(method, str) else "?"


def refusal(hf_config: dict[str, Any]) -> str:
    """Why this folder's quantization is not read ('' when it is not quantized, or dequantized on load)."""
    method = quant_method(hf_config)
    if method is None:
        return ""
    if method == "?":
        return "config.json's quantization_config names no quant_method attnlab knows; open the full-precision model"
    named = METHOD_NAMES.get(method, repr(method))
    if method in ("gptq", "awq"):
        try:
            settings(method, hf_config["quantization_config"])
        except ValueError as e:
            return f"{named}-quantized checkpoints like this one are not supported: {e}"
    if method in DEQUANTIZED_METHODS:
        return ""
    return (
        f"{named}-quantized checkpoints are not supported: attnlab dequantizes bitsandbytes (4-bit nf4 / fp4, 8-bit), "
        f"GPTQ and AWQ folders only (config.json quantization_config.quant_method {method!r}); open the "
        "full-precision model, or dequantize it first"
    )


def settings(method: str, qc: dict[str, Any]) -> tuple[int, int, bool]:
    """(bits, group size (-1: one group), zeros stored minus one) of a GPTQ / AWQ quantization_config, or
    ValueError naming the setting attnlab does not read."""
    bits, group = qc.get("bits", qc.get("w_bit")), qc.get("group_size", qc.get("q_group_size", -1))
    if method == "awq":
        version = str(qc.get("version", "gemm")).lower()
        if version != "gemm" or qc.get("zero_point", True) is not True or bits != 4:
            raise ValueError(
                f"AWQ version {version!r}, zero_point {qc.get('zero_point', True)!r}, {bits!r} bits: attnlab reads "
                "AWQ's 4-bit GEMM layout with zero points only"
            )
    elif bits not in GPTQ_BITS or qc.get("checkpoint_format", "gptq") not in GPTQ_FORMATS:
        raise ValueError(
            f"GPTQ with {bits!r} bits in checkpoint_format {qc.get('checkpoint_format', 'gptq')!r}: attnlab reads "
            f"{', '.join(map(str, GPTQ_BITS))} bits in the formats {', '.join(GPTQ_FORMATS)}"
        )
    if qc.get("dynamic"):  # GPTQModel's per-module bits and groups
        raise ValueError("its per-module settings (dynamic) are not read; attnlab reads one bits and group size")
    if isinstance(group, bool) or not isinstance(group, int) or not (group == -1 or 0 < group <= 1 << 20):
        raise ValueError(f"group_size {limits.excerpt(group)} is not -1 or a positive whole number")
    return int(bits), group, method == "gptq" and qc.get("checkpoint_format", "gptq") == "gptq"
