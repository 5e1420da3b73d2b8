"""Run in a CHILD process with transformers 4.46.3 on its path (tests/families/test_bert_relative_key.py): the last
transformers that implements BERT's position_embedding_type relative_key / relative_key_query. Builds tiny
random BERTs from config objects, saves each as a Hugging Face folder (save_pretrained) and its eager outputs
(every layer's attention weights, the hidden states, the logits or last hidden state) beside it.

    python bert_relkey_reference.py OUT_DIR   ->   OUT_DIR/<case>/ (config.json, model.safetensors)
                                                   OUT_DIR/<case>.outputs.safetensors

Imports neither attnlab nor anything from tests/: only torch, safetensors and that transformers."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import transformers
from safetensors.torch import save_file

IDS = [5, 17, 3, 88, 42, 7, 9, 61, 11, 2, 64, 30]  # 12 tokens: distances up to ±11 of the 2·16 − 1 rows
CASES = {  # name -> (model class, position_embedding_type)
    "bert_relative_key": ("BertForMaskedLM", "relative_key"),
    "bert_relative_key_query": ("BertForMaskedLM", "relative_key_query"),
    "bert_relative_key_query_base": ("BertModel", "relative_key_query"),
}


def build(cls_name: str, kind: str) -> torch.nn.Module:
    config = transformers.BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=16,
        position_embedding_type=kind,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    model = getattr(transformers, cls_name)(config)
    with torch.no_grad():  # a larger spread than the 0.02 init, so a wrong mapping shows in the numbers
        for name, p in model.named_parameters():
            p.normal_(1.0 if name.endswith("LayerNorm.weight") else 0.0, 0.3)
    return model.eval()


def run(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        out = model(input_ids=torch.tensor([IDS]), output_attentions=True, output_hidden_states=True)
    tensors = {f"attention.{i}": a[0] for i, a in enumerate(out.attentions)}  # [H, T, T] each
    tensors.update({f"hidden.{i}": h[0] for i, h in enumerate(out.hidden_states)})  # [T, d] each
    tensors["ids"] = torch.tensor(IDS)
    if hasattr(out, "logits"):
        tensors["logits"] = out.logits[0]  # [T, vocab]
    return {k: v.contiguous() for k, v in tensors.items()}


def main(out_dir: Path) -> None:
    assert transformers.__version__ == "4.46.3", transformers.__version__
    for name, (cls_name, kind) in CASES.items():
        model = build(cls_name, kind)
        model.save_pretrained(out_dir / name, safe_serialization=True)
        save_file(run(model), str(out_dir / f"{name}.outputs.safetensors"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
