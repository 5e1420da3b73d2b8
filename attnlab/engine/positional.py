"""Positional encodings: sinusoidal (fixed), learned (a trained table) and rotary (rotates Q and K)."""

from __future__ import annotations

import math

import torch


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
    n_positions: int, d_head: int, device: torch.device | str | None = None, theta: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of pos * theta^(-2i/d_head) for each rotated pair i of a head.  -> two [P, d_head/2]"""
    inv_freq = torch.pow(theta, -torch.arange(0, d_head, 2, dtype=torch.float32, device=device) / d_head)
    angle = torch.arange(n_positions, dtype=torch.float32, device=device).unsqueeze(1) * inv_freq
    return angle.cos(), angle.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "interleaved") -> torch.Tensor:
    """Rotate pair i of x [..., T, d_head] by its position's angle i. "interleaved": pairs (x[2i], x[2i+1]);
    "half" (Hugging Face's rotate_half): pairs (x[i], x[i + d_head/2])."""
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
