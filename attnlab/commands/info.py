"""`attnlab info CHECKPOINT`: what a checkpoint holds (architecture, sizes, tokenizer, metadata, tensors)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING, Any

from attnlab.commands.loading import add_import_arguments, import_settings, load_any
from attnlab.commands.refusal import refuse

if TYPE_CHECKING:
    from attnlab.engine.live import LiveModel


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "checkpoint",
        help="a .safetensors (or .pt/.pth) checkpoint, a .gguf file, a Hugging Face model folder, a model in the "
        "Hugging Face "
        "cache (org/name[@revision]), a nanoGPT ckpt.pt, or 'bundled:NAME'",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_import_arguments(parser)


def describe(model: LiveModel) -> dict[str, Any]:
    """Everything `info` prints, as plain JSON-able data."""
    cfg = model.config
    tensors = model.module.checkpoint_tensors()
    tokenizers = {}
    for side, tok in (("src", model.src_tokenizer), ("tgt", model.tgt_tokenizer)):
        if tok is not None:
            tokenizers[side] = {"kind": tok.kind, "vocab_size": tok.vocab_size}
    return {
        "name": model.name,
        "arch": cfg.arch,
        "config": dataclasses.asdict(cfg),
        "parameters": sum(t.numel() for t in tensors.values()),
        "tokenizers": tokenizers,
        "metadata": model.metadata,
        "tensors": {name: list(t.shape) for name, t in tensors.items()},
        "snapshots": snapshots_facts(model),
    }


def snapshots_facts(model: LiveModel) -> dict[str, Any] | None:
    """The training snapshots beside the checkpoint: file, steps and losses (or why they cannot be read)."""
    from attnlab.checkpoints.snapshots import SNAPSHOTS_FILE_KEY, find_snapshots

    found, problem = find_snapshots(model)
    if found is None:
        return {"file": model.metadata[SNAPSHOTS_FILE_KEY], "error": problem} if problem else None
    return {"file": str(found.path), "steps": list(found.steps), "losses": {s: found.loss_at(s) for s in found.steps}}


def as_text(d: dict) -> str:
    cfg = d["config"]
    d_k = cfg.get("head_dim") or cfg["d_model"] // cfg["n_heads"]  # w-headdim: head_dim when set
    lines = [
        f"{d['name']}: {d['arch']}, {d['parameters']:,} parameters",
        f"  d_model {cfg['d_model']}, {cfg['n_heads']} heads (d_k {d_k}), d_ff {cfg['d_ff']}, {cfg['activation']}",
        f"  layers: {cfg['n_encoder_layers']} encoder, {cfg['n_decoder_layers']} decoder"
        if d["arch"] == "encoder-decoder"
        else f"  layers: {cfg['n_decoder_layers' if d['arch'] == 'decoder-only' else 'n_encoder_layers']}",
        f"  {'pre' if cfg['norm_first'] else 'post'}-norm"
        f"{' + final norm' if cfg['final_norm'] else ''}, "
        f"{cfg['positional']} positions, max length {cfg['max_len']}",
        f"  embeddings: {'shared' if cfg['share_embeddings'] else 'separate'}, output projection "
        f"{'tied to the embedding' if cfg['tie_output'] else 'its own'}, "
        f"{'scaled by sqrt(d_model)' if cfg['scale_embedding'] else 'unscaled'}",
    ]
    for side, tok in d["tokenizers"].items():
        lines.append(
            f"  {'source' if side == 'src' else 'target'} tokenizer: {tok['kind']}, {tok['vocab_size']} tokens"
        )
    meta = dict(d["metadata"])
    settings, notices = meta.pop("settings", None), meta.pop("notices", None)
    generation = meta.pop("generation", None)  # engine/sampling_settings.GENERATION_KEY
    if isinstance(meta.get("quantization"), dict):  # the loader's fact (checkpoints/quantized.py): its sentence
        meta["quantization"] = meta["quantization"].get("text", "")
    if meta:
        lines.append("metadata:")
        lines += [f"  {k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in meta.items()]
    if isinstance(notices, list) and notices:
        lines.append("notes from loading:")
        lines += [f"  - {note}" for note in notices]
    if isinstance(generation, dict) and generation:
        lines += sampling_lines(generation)
    if isinstance(settings, dict) and settings:
        lines += settings_table(settings)
    snaps = d["snapshots"]
    if snaps:
        kept = ", ".join(map(str, snaps["steps"])) if "steps" in snaps else f"unreadable ({snaps['error']})"
        lines.append(f"training snapshots: steps {kept}, in {snaps['file']}")
    lines.append(f"tensors ({len(d['tensors'])}):")
    width = max(len(n) for n in d["tensors"])
    lines += [f"  {name:<{width}}  [{', '.join(map(str, shape))}]" for name, shape in d["tensors"].items()]
    return "\n".join(lines)


def sampling_lines(generation: dict[str, Any]) -> list[str]:
    """The sampling defaults and where each came from (generation_config.json or transformers' default)."""
    rows = [(str(f), str(e.get("value")), str(e.get("source"))) for f, e in generation.items() if isinstance(e, dict)]
    width = max((len(f) + len(v) for f, v, _s in rows), default=0) + 1
    return ["sampling defaults:"] + [f"  {f + ' ' + v:<{width}}  {s}" for f, v, s in rows]


def settings_table(settings: dict[str, Any]) -> list[str]:
    """Where each setting that applies came from, as aligned columns (setting, value, from); the settings
    left at attnlab's defaults are counted, not listed (`--json` gives them all)."""
    from attnlab.present.provenance import defaults_note, setting_rows

    rows, left = setting_rows(settings)
    if not rows:
        return []
    widths = [max(len(row[i]) for row in [("setting", "value", "from"), *rows]) for i in range(2)]
    lines = ["where each setting came from:"]
    lines += [
        f"  {a:<{widths[0]}}  {b:<{widths[1]}}  {c}".rstrip() for a, b, c in [("setting", "value", "from"), *rows]
    ]
    if left:
        lines.append(f"  ({defaults_note(left)}; --json lists all)")
    return lines


def run(args: argparse.Namespace) -> int:
    from attnlab.checkpoints import CheckpointError

    try:
        model = load_any(args.checkpoint, **import_settings(args))
    except CheckpointError as e:
        return refuse("attnlab info", e)
    d = describe(model)
    print(json.dumps(d, indent=2, ensure_ascii=False, default=str) if args.json else as_text(d))
    return 0
