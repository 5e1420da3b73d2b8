"""The activation functions of the feed-forward networks and heads, by the name a ModelConfig gives them.

A leaf: the FFN (ffn.py, moe.py), the output heads (embedding.py, encoder_parts.py) and the derived rule that
recomputes an FFN's hidden activations on read (derived.py) all read this one table.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor

ACTIVATION_FUNCTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,  # exact, with erf
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2's "gelu_new"
    "silu": F.silu,  # x * sigmoid(x), a.k.a. swish
}
