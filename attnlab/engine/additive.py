"""Additive (Bahdanau) attention: a small GRU encoder-decoder, the lineage the Transformer starts from.

score(s, h) = vᵀ tanh(W s + U h): the decoder state s asks, each encoder state h answers, and a tiny one-layer
network (W, U, v) rates the match — where the Transformer takes a dot product q · k. The weights are the softmax
of the scores over the source positions; the context is the weighted sum of the encoder states. Pure torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn


@dataclass(frozen=True)
class AdditiveConfig:
    vocab_size: int
    d_embed: int = 64
    d_hidden: int = 128  # decoder state size; each encoder direction has d_hidden // 2
    d_attn: int = 64  # size of the tanh layer that scores a (decoder state, encoder state) pair
    max_len: int = 64  # longest output greedy decoding produces

    def to_dict(self) -> dict:
        return asdict(self)


def additive_scores(s: Tensor, h: Tensor, w: nn.Linear, u: nn.Linear, v: nn.Linear) -> Tensor:
    """vᵀ tanh(W s + U h_j) for every source position j. s [B, d_s], h [B, S, d_h] -> scores [B, S]."""
    return v(torch.tanh(w(s)[:, None, :] + u(h))).squeeze(-1)  # [B, S]


class AdditiveSeq2Seq(nn.Module):
    """Bidirectional GRU encoder, GRU decoder with additive attention, one shared vocabulary."""

    def __init__(self, cfg: AdditiveConfig):
        super().__init__()
        self.cfg = cfg
        half = cfg.d_hidden // 2
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_embed)
        self.encoder = nn.GRU(cfg.d_embed, half, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(cfg.d_hidden, cfg.d_hidden)
        self.attn_w = nn.Linear(cfg.d_hidden, cfg.d_attn, bias=False)  # W (applied to the decoder state s)
        self.attn_u = nn.Linear(cfg.d_hidden, cfg.d_attn)  # U (applied to each encoder state h)
        self.attn_v = nn.Linear(cfg.d_attn, 1, bias=False)  # v
        self.decoder = nn.GRUCell(cfg.d_embed + cfg.d_hidden, cfg.d_hidden)
        self.out = nn.Linear(cfg.d_hidden * 2 + cfg.d_embed, cfg.vocab_size)

    def encode(self, src: Tensor, src_pad: Tensor) -> tuple[Tensor, Tensor]:
        """src [B, S] ids, src_pad [B, S] bool -> encoder states h [B, S, d_hidden], first decoder state [B, d]."""
        h, _ = self.encoder(self.embed(src))  # [B, S, d_hidden]
        h = h.masked_fill(src_pad[..., None], 0.0)
        mean = h.sum(1) / (~src_pad).sum(1, keepdim=True).clamp_min(1)  # [B, d_hidden]
        return h, torch.tanh(self.init_state(mean))

    def attend(self, s: Tensor, h: Tensor, src_pad: Tensor) -> tuple[Tensor, Tensor]:
        """weights [B, S] (softmax of the additive scores, 0 on <pad>) and context [B, d_hidden]."""
        scores = additive_scores(s, h, self.attn_w, self.attn_u, self.attn_v).masked_fill(src_pad, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # [B, S]
        return weights, torch.bmm(weights[:, None, :], h).squeeze(1)  # [B, d_hidden]

    def step(self, prev: Tensor, s: Tensor, h: Tensor, src_pad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One output step: prev ids [B], state s [B, d] -> logits [B, V], new state [B, d], weights [B, S]."""
        e = self.embed(prev)  # [B, d_embed]
        weights, context = self.attend(s, h, src_pad)
        s = self.decoder(torch.cat([e, context], -1), s)  # [B, d_hidden]
        logits = self.out(torch.cat([s, context, e], -1))  # [B, V]
        return logits, s, weights

    def forward(self, src: Tensor, src_pad: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing: logits [B, T, V] and attention weights [B, T, S] for decoder input tgt_in [B, T]."""
        h, s = self.encode(src, src_pad)
        all_logits, all_weights = [], []
        for t in range(tgt_in.shape[1]):
            logits, s, weights = self.step(tgt_in[:, t], s, h, src_pad)
            all_logits.append(logits)
            all_weights.append(weights)
        return torch.stack(all_logits, 1), torch.stack(all_weights, 1)

    @torch.no_grad()
    def greedy(self, src: list[int], bos: int, eos: int, max_len: int | None = None) -> tuple[list[int], Tensor]:
        """Greedy translation of one sentence: output ids (without <s>/</s>) and alignment [T_out, S]."""
        ids = torch.tensor([src])  # [1, S]
        pad = torch.zeros_like(ids, dtype=torch.bool)  # [1, S]
        h, s = self.encode(ids, pad)
        prev, out, rows = torch.tensor([bos]), [], []
        for _ in range(max_len or self.cfg.max_len):
            logits, s, weights = self.step(prev, s, h, pad)
            rows.append(weights[0])
            prev = logits.argmax(-1)  # [1]
            if int(prev) == eos:
                break
            out.append(int(prev))
        return out, torch.stack(rows)  # alignment [T_out (+1 for </s>), S]

    @torch.no_grad()
    def greedy_batch(self, src: Tensor, bos: int, eos: int, pad: int, max_len: int | None = None) -> Tensor:
        """Greedy translation of B sentences of the SAME length (no padding: the backward GRU would read it),
        each step as `greedy` takes it. src [B, S] -> ids [B, T] (<pad> after each sentence's </s>)."""
        no_pad = torch.zeros_like(src, dtype=torch.bool)  # [B, S]
        h, s = self.encode(src, no_pad)
        prev = torch.full((src.shape[0],), bos, dtype=torch.long)  # [B]
        finished = torch.zeros(src.shape[0], dtype=torch.bool)  # [B]
        out = []
        for _ in range(max_len or self.cfg.max_len):
            logits, s, _ = self.step(prev, s, h, no_pad)
            prev = torch.where(finished, torch.full_like(prev, pad), logits.argmax(-1))  # [B]
            out.append(prev)
            finished |= prev == eos
            if bool(finished.all()):
                break
        return torch.stack(out, 1)  # [B, T]
