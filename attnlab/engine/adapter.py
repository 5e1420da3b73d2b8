"""A LoRA adapter held beside a model's weights, applied at a strength s: W_eff = W + s·ΔW (issue 35).

The loader (checkpoints/adapters.py) turns an adapter folder into `AdapterWeights`: ΔW = scaling·B·A for each
adapted weight, already named and laid out as attnlab's parameters (a fused GPT-2 c_attn split into W_Q, W_K,
W_V by the family's own converter), plus a copy of the base weights it changes. `set_strength` writes
base + s·ΔW into those parameters in place; strength 0 copies the base back, bit for bit.

The writes change the parameters' version counters, which the run cache reads as "the weights changed"
(engine/live_reuse.run_key). When every adapted weight lies inside the layers, those writes are counted in
`bumps` and forgiven by the run key: the strength is then a RunOptions field whose change re-runs from the first
adapted layer only (the option table's ADAPTER_STRENGTH, ModelConfig.adapted_from). An adapter that changes an
embedding or the output head is not forgiven: a strength change there is a full run. Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from attnlab.engine import names

STACK_PREFIXES = {"encoder": "enc", "decoder": "dec"}  # attnlab parameter names' stack -> layer names' stack


@dataclass(frozen=True)
class LoraFactors:
    """One adapted module as the adapter stores it: ΔW = scaling · B · A (transposed when fan_in_fan_out).
    `a` [r, in], `b` [out, r], both float32 on the CPU; `targets` the attnlab parameters its ΔW lands in."""

    module: str  # the Hugging Face module name ("transformer.h.0.attn.c_attn")
    a: torch.Tensor  # [r, in]
    b: torch.Tensor  # [out, r]
    scaling: float  # lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora
    alpha: float
    rslora: bool
    fan_in_fan_out: bool
    targets: tuple[str, ...] = ()

    @property
    def rank(self) -> int:
        return int(self.a.shape[0])

    def delta(self) -> torch.Tensor:
        """ΔW as peft computes it (tuners/lora/layer.py get_delta_weight): transpose(B @ A) * scaling, float32."""
        product = self.b.float() @ self.a.float()  # [out, r] @ [r, in] -> [out, in]
        return (product.T if self.fan_in_fan_out else product) * self.scaling


def layer_of_parameter(name: str) -> str | None:
    """'decoder.3.self_attn.w_q.weight' -> 'dec.3'; None for a weight outside the layers (an embedding)."""
    parts = name.split(".")
    if len(parts) > 2 and parts[0] in STACK_PREFIXES and parts[1].isdigit():
        return names.layer(STACK_PREFIXES[parts[0]], int(parts[1]))
    return None


def first_adapted(layer_order: list[str], parameters: list[str]) -> str:
    """ModelConfig.adapted_from for an adapter changing `parameters`: the first of them in run order, "all"
    when one lies outside the layers."""
    layers = [layer_of_parameter(n) for n in parameters]
    if any(found is None for found in layers):
        return "all"
    return min((found for found in layers if found is not None), key=layer_order.index, default="all")


@dataclass
class AdapterWeights:
    """ΔW per attnlab parameter, the base weights it changes, and the strength the module holds now."""

    deltas: dict[str, torch.Tensor]  # attnlab parameter name -> ΔW, float32, the parameter's shape
    factors: dict[str, LoraFactors]  # Hugging Face module -> its B, A and scaling (the ΔW view)
    description: str = "LoRA adapter"
    strength: float = 0.0  # what the parameters hold now (attach() starts from the base: 0)
    confined: bool = True  # every ΔW inside the layers: the run cache resumes at the first adapted layer
    bumps: int = 0  # version-counter increments of our own writes (forgiven by the run key when confined)
    base: dict[str, torch.Tensor] = field(default_factory=dict)

    def attach(self, module: nn.Module) -> None:
        """Keep a copy of the base weights the adapter changes (the module holds the base model now)."""
        params = dict(module.named_parameters())
        self.base = {n: params[n].detach().clone() for n in self.deltas}

    def set_strength(self, module: nn.Module, strength: float) -> None:
        """Write base + strength·ΔW into the adapted parameters (strength 0: the base itself)."""
        if strength == self.strength:
            return
        params = dict(module.named_parameters())
        before = sum(params[n]._version for n in self.deltas)
        with torch.no_grad():
            for name, delta in self.deltas.items():
                p, base = params[name], self.base[name]
                if strength == 0:
                    p.copy_(base)
                else:  # in float32 (peft merges so), then the dtype the parameter is held in
                    merged = base.float() + strength * delta.to(base.device)  # the parameter's shape
                    p.copy_(merged.to(p.dtype))
        if self.confined:
            self.bumps += sum(params[n]._version for n in self.deltas) - before
        self.strength = strength

    def module_names(self) -> list[str]:
        """The adapted Hugging Face modules, in the adapter's order."""
        return list(self.factors)
