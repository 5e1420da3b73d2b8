"""A GPT written the way nanoGPT's model.py writes it (github.com/karpathy/nanoGPT, read, re-typed for the
tests): the reference that attnlab's reading of a nanoGPT ckpt.pt must reproduce. Also the dict that nanoGPT's
train.py saves."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm: the bias is optional."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bias):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # [B, H, T, hs]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # [B, H, T, T]
        att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = F.softmax(att, dim=-1) @ v  # [B, H, T, hs]
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, n_embd, bias):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, bias):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, bias)
        self.ln_2 = LayerNorm(n_embd, bias)
        self.mlp = MLP(n_embd, bias)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer, n_head, n_embd, block_size, bias, vocab_size, dropout=0.0):
        super().__init__()
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(vocab_size, n_embd),
                wpe=nn.Embedding(block_size, n_embd),
                h=nn.ModuleList(Block(n_embd, n_head, bias) for _ in range(n_layer)),
                ln_f=LayerNorm(n_embd, bias),
            )
        )
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        for p in self.parameters():  # random, non-trivial LayerNorms too
            nn.init.normal_(p, std=0.3)

    def forward(self, idx):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)  # [B, T, C]
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))  # [B, T, V]


def train_py_checkpoint(model_args: dict, seed: int = 0, compiled: bool = False) -> tuple[GPT, dict]:
    """(the GPT, the dict nanoGPT's train.py passes to torch.save) after one optimizer step."""
    torch.manual_seed(seed)
    model = GPT(**model_args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
    idx = torch.randint(0, model_args["vocab_size"], (2, 5))
    F.cross_entropy(model(idx).flatten(0, 1), idx.flatten()).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    state = model.state_dict()
    if compiled:  # torch.compile wraps the module: every key gains _orig_mod.
        state = {f"_orig_mod.{k}": v for k, v in state.items()}
    checkpoint = {
        "model": state,
        "optimizer": optimizer.state_dict(),
        "model_args": model_args,
        "iter_num": 250,
        "best_val_loss": torch.tensor(1.4697),
        "config": {
            "out_dir": "out-shakespeare-char",
            "batch_size": 64,
            "learning_rate": 1e-3,
            "compile": compiled,
            "dataset": "shakespeare_char",
        },
    }
    return model, checkpoint
