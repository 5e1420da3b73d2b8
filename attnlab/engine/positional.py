"""Positional encodings: sinusoidal (fixed), learned (a trained table) and rotary (rotates Q and K)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from attnlab.engine.config import ModelConfig


def sinusoidal_table(n_positions: int, d_model: int, layout: str = "interleaved") -> torch.Tensor:
    """ "interleaved" (the 2017 paper): PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same).
    "marian": the same sines in the first half of the dimensions and the cosines in the second half.
    -> [n_positions, d_model]"""
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # [P, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [ceil(d/2)]
    angle = pos / torch.pow(10000.0, two_i / d_model)  # [P, ceil(d/2)]
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    if layout == "marian":
        half = (d_model + 1) // 2
        pe[:, :half] = torch.sin(angle)
        pe[:, half:] = torch.cos(angle[:, : d_model // 2])
        return pe.float()
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()


def rotary_angles(
    n_positions: int,
    d_head: int,
    device: torch.device | str | None = None,
    theta: float = 10000.0,
    scaling: ModelConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of pos * inv_freq[i] for each rotated pair i of a head, inv_freq = theta^(-2i/d_head) changed
    by the config's rope_scaling (`scaling`: the ModelConfig, or None for plain rotary); yarn multiplies both
    by its attention factor.  -> two [P, d_head/2]"""
    inv_freq = rotary_inv_freq(d_head, theta, scaling).to(device)  # [d_head/2]
    angle = torch.arange(n_positions, dtype=torch.float32, device=device).unsqueeze(1) * inv_freq  # [P, d_head/2]
    factor = scaling.rope_attention_factor if scaling is not None and scaling.rope_scaling == "yarn" else 1.0
    if factor != 1.0:
        return angle.cos() * factor, angle.sin() * factor
    return angle.cos(), angle.sin()


def rotary_inv_freq(d_head: int, theta: float, cfg: ModelConfig | None = None) -> torch.Tensor:
    """The rotation speed of each pair i, theta^(-2i/d_head), as the config's rope_scaling changes it (the
    arithmetic of transformers' modeling_rope_utils).  -> [d_head/2]"""
    inv_freq = 1.0 / theta ** (torch.arange(0, d_head, 2, dtype=torch.int64).float() / d_head)  # [d_head/2]
    kind = "none" if cfg is None else cfg.rope_scaling
    if kind == "linear":  # positions divided by s, which is the same as every speed divided by s
        return inv_freq / cfg.rope_factor  # type: ignore[union-attr]
    if kind == "llama3":
        return _llama3_inv_freq(inv_freq, cfg)  # type: ignore[arg-type]
    if kind == "yarn":
        return _yarn_inv_freq(d_head, theta, cfg)  # type: ignore[arg-type]
    return inv_freq  # "none"; "dynamic" changes theta only past max_position_embeddings, which inputs never reach


def _llama3_inv_freq(inv_freq: torch.Tensor, cfg: ModelConfig) -> torch.Tensor:
    """Llama 3.1: pairs slower than N / low_freq_factor positions per turn are slowed by s, pairs faster than
    N / high_freq_factor are kept, those between are blended smoothly.  [d/2] -> [d/2]"""
    s, n = cfg.rope_factor, cfg.rope_original_max_len
    low, high = cfg.rope_low_freq_factor, cfg.rope_high_freq_factor
    wavelen = 2 * math.pi / inv_freq  # [d/2] positions per full turn
    slowed = torch.where(wavelen > n / low, inv_freq / s, inv_freq)
    smooth = (n / wavelen - low) / (high - low)  # [d/2]: 0 at the slow end, 1 at the fast end
    blended = (1 - smooth) * slowed / s + smooth * slowed
    medium = ~(wavelen < n / high) * ~(wavelen > n / low)
    return torch.where(medium, blended, slowed)


def _yarn_inv_freq(d_head: int, theta: float, cfg: ModelConfig) -> torch.Tensor:
    """YaRN: pairs that turn fewer than beta_slow times over the original N positions are slowed by s, pairs
    that turn more than beta_fast times are kept, with a linear ramp between (in dimension index).  -> [d/2]"""
    s, n = cfg.rope_factor, cfg.rope_original_max_len

    def dim_of(rotations: float) -> float:  # the dimension index that turns `rotations` times over N positions
        return (d_head * math.log(n / (rotations * 2 * math.pi))) / (2 * math.log(theta))

    low, high = dim_of(cfg.rope_beta_fast), dim_of(cfg.rope_beta_slow)
    if cfg.rope_truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d_head - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(d_head // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)  # [d/2]
    speeds = theta ** (torch.arange(0, d_head, 2).float() / d_head)  # [d/2]
    kept = 1 - ramp  # 1: extrapolate (keep the speed), 0: interpolate (slow by s)
    return (1.0 / (s * speeds)) * (1 - kept) + (1.0 / speeds) * kept


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "interleaved") -> torch.Tensor:
    """Rotate pair i of x [..., T, d_head] by its position's angle i. "interleaved": pairs (x[2i], x[2i+1]);
    "half" (Hugging Face's rotate_half): pairs (x[i], x[i + d_head/2]). Tables [T, r/2] narrower than the head
    (partial rotary, r < d_head) turn the first r dimensions and pass the rest through."""
    rotated = 2 * cos.shape[-1]
    if rotated < x.shape[-1]:
        turned = apply_rotary(x[..., :rotated], cos, sin, layout)  # [..., T, r]
        return torch.cat((turned, x[..., rotated:]), dim=-1)  # [..., T, d_head]
    if layout == "half":
        first, second = x.chunk(2, dim=-1)  # [..., T, d_head/2] each
        return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)  # [..., T, d_head]
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # [..., T, d_head/2] each
    rot_even = x_even * cos - x_odd * sin
    rot_odd = x_even * sin + x_odd * cos
    return torch.stack((rot_even, rot_odd), dim=-1).flatten(-2)  # [..., T, d_head]


def sinusoidal_period(dim: int, d_model: int) -> float:
    """Wavelength in positions of model dimension `dim` (dims 2i and 2i+1 share one)."""
    return float(2 * math.pi * 10000 ** ((dim - dim % 2) / d_model))
