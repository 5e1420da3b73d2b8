"""What the BERT-like encoders beyond BERT add to the ends of the model and its stack: ALBERT's and ELECTRA's
factorised embedding (tables embed_dim wide, then a linear map of LayerNorm(sum) to d_model), ALBERT's one set of
layer weights shared by every layer, and ELECTRA's discriminator head (one "was this token replaced?" logit per
token). Shapes: B batch, T tokens, e = embed_dim, d = d_model."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.engine import names
from attnlab.engine.activations import ACTIVATION_FUNCTIONS
from attnlab.engine.blocks import EncoderLayer
from attnlab.engine.config import ModelConfig
from attnlab.engine.recorder import Recorder

REPLACED_CLASSES = ("original", "replaced")  # the discriminator's two outcomes, in the order of its logits' columns


def encoder_layers(cfg: ModelConfig) -> list[EncoderLayer]:
    """The encoder's layers: one module repeated n times when the model shares one set of weights (ALBERT),
    else n modules of their own."""
    if cfg.share_layers:
        return [EncoderLayer(cfg)] * cfg.n_encoder_layers
    return [EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers)]


def add_projection(model: nn.Module, cfg: ModelConfig, side: str) -> None:
    """The factorised embedding's map from embed_dim to d_model (`<side>_embed_proj`), when the model has one."""
    if cfg.embed_dim:
        setattr(model, f"{side}_embed_proj", nn.Linear(cfg.embed_dim, cfg.d_model))


def project_embedding(proj: nn.Linear | None, x: Tensor, side: str, rec: Recorder) -> Tensor:
    """x [B, T, e] -> [B, T, d] = x W + b with a side's `proj` (`<side>_embed_proj`, recorded as
    '<side>.embed_proj'); x itself without a projection."""
    if proj is None:
        return x
    out = proj(x)  # [B, T, d]
    rec(names.side_entry(side, names.EMBED_PROJ), out)
    return out


class ReplacedHead(nn.Module):
    """ELECTRA's discriminator head: z = (act(h W1 + b1)) w2 + b2, one logit per token for "this token was
    replaced by the generator". The logits are [0, z] per token, so their softmax is exactly
    [1 - sigmoid(z), sigmoid(z)] (REPLACED_CLASSES): the output stage's probabilities are P(original), P(replaced)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)
        self.act = ACTIVATION_FUNCTIONS[cfg.activation]
        self.dense_prediction = nn.Linear(cfg.d_model, 1)

    def forward(self, h: Tensor, rec: Recorder) -> Tensor:
        """h [B, T, d] -> logits [B, T, 2]; records head.pre and head.hidden."""
        pre = self.dense(h)  # [B, T, d]
        hidden = self.act(pre)  # [B, T, d]
        rec(names.head_entry("pre"), pre)
        rec(names.head_entry("hidden"), hidden)
        z = self.dense_prediction(hidden)  # [B, T, 1]
        return torch.cat([torch.zeros_like(z), z], dim=-1)  # [B, T, 2]
