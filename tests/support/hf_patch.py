"""Activation patching written with plain torch forward hooks on transformers' own modules: the reference the
engine's patched runs are checked against (tests/engine/test_patching_hf.py).

A patch names (step, layer, head, position, site): run A's value of that module output (or input, for the
per-head context that enters the output projection) is captured by one forward, and written into run B's
forward at the same place. Q, K, V are patched at their projections' outputs (before rotary positions, which
turn each position alike in A and B, so the result is the same as patching them turned)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

STEPS = ("q", "k", "v", "context", "out", "ffn", "layer")


@dataclass(frozen=True)
class Point:
    module: torch.nn.Module
    pre: bool = False  # the module's input (a pre-hook) rather than its output
    offset: int = 0  # where the step's columns start in the module's output (GPT-2's fused c_attn)
    span: int | None = None  # how many columns are the step's (None: all)


def points(name: str, model: torch.nn.Module, layer: int, site: str = "self") -> dict[str, Point]:
    """Where each step of layer `layer` lives in transformers' model `name` (gpt2, llama, bert, marian)."""
    if name == "gpt2":
        block = model.transformer.h[layer]
        d = model.config.n_embd
        attn = block.attn
        fused = {s: Point(attn.c_attn, offset=i * d, span=d) for i, s in enumerate(("q", "k", "v"))}
        return {
            **fused,
            "context": Point(attn.c_proj, pre=True),
            "out": Point(attn.c_proj),
            "ffn": Point(block.mlp),
            "layer": Point(block),
        }
    if name == "llama":
        block = model.model.layers[layer]
        attn = block.self_attn
        proj = {"q": attn.q_proj, "k": attn.k_proj, "v": attn.v_proj}
        out = attn.o_proj
        return _points(proj, out, block.mlp, block)
    if name == "bert":
        block = model.bert.encoder.layer[layer]
        own = block.attention.self
        proj = {"q": own.query, "k": own.key, "v": own.value}
        return _points(proj, block.attention.output.dense, block.output.dense, block)
    if name == "marian":
        block = model.model.decoder.layers[layer]
        attn = block.encoder_attn if site == "cross" else block.self_attn
        proj = {"q": attn.q_proj, "k": attn.k_proj, "v": attn.v_proj}
        return _points(proj, attn.out_proj, block.fc2, block)
    raise ValueError(name)


def _points(proj: dict, out: torch.nn.Module, ffn: torch.nn.Module, block: torch.nn.Module) -> dict[str, Point]:
    return {
        **{s: Point(m) for s, m in proj.items()},
        "context": Point(out, pre=True),
        "out": Point(out),
        "ffn": Point(ffn),
        "layer": Point(block),
    }


def _first(value):
    return value[0] if isinstance(value, tuple) else value


def patched_logits(model, point: Point, step: str, head: int | None, position: int | None, d_head: int, run_a, run_b):
    """Run B's logits with `point`'s value of run A written over it (one head's columns, one position, both
    or all). run_a / run_b: () -> the model's output, each called once."""
    captured: dict[str, torch.Tensor] = {}
    width = d_head if step in ("q", "k", "v", "context") else None

    def part(t: torch.Tensor):
        rows = slice(None) if position is None else position
        if width is not None and head is not None:
            start = point.offset + head * width
            cols = slice(start, start + width)
        elif point.span is not None:  # GPT-2's fused q|k|v: the whole of one of the three
            cols = slice(point.offset, point.offset + point.span)
        else:
            cols = slice(None)
        return (0, rows, cols)

    def grab(value):
        captured["a"] = _first(value).detach().clone()

    def put(value):
        t = _first(value).clone()
        index = part(t)
        t[index] = captured["a"][index]
        return (t, *value[1:]) if isinstance(value, tuple) else t

    def hook(grab_or_put):
        if point.pre:
            return point.module.register_forward_pre_hook(lambda _m, args: (grab_or_put(args[0]),) + args[1:])
        return point.module.register_forward_hook(lambda _m, _args, out: grab_or_put(out))

    handle = hook(lambda v: (grab(v), v)[1])
    try:
        with torch.no_grad():
            run_a()
    finally:
        handle.remove()
    handle = hook(put)
    try:
        with torch.no_grad():
            return run_b().logits[0]
    finally:
        handle.remove()
