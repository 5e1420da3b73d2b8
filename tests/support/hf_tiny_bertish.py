"""Tiny random Hugging Face models of the BERT-like encoders beyond BERT, RoBERTa and DistilBERT (XLM-RoBERTa,
CamemBERT, ELECTRA, ALBERT), built from config objects like hf_tiny.py's (never downloaded). Appended to
family_cases.FAMILY_CASES; used by test_hf_bertish.py, test_hf_families.py and benchmarks/family_matrix.py."""

from __future__ import annotations

import torch
import transformers

from tests.support.hf_tiny import VOCAB, Case, _model

ENCODER = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=48,
)


def xlm_roberta():
    """XLM-RoBERTa: RoBERTa's layout under its own model_type (positions from row padding_idx + 1 = 2)."""
    cfg = transformers.XLMRobertaConfig(**ENCODER, max_position_embeddings=34, pad_token_id=1)
    return _model(transformers.XLMRobertaForMaskedLM, cfg)


def camembert():
    """CamemBERT: the same layout again, under model_type camembert."""
    cfg = transformers.CamembertConfig(**ENCODER, max_position_embeddings=34, pad_token_id=1)
    return _model(transformers.CamembertForMaskedLM, cfg)


def electra(kind: str = "discriminator", embedding_size: int = 16):
    """ELECTRA with a factorised embedding (16 wide, projected to 32): the discriminator (ElectraForPreTraining),
    the generator (ElectraForMaskedLM) or the bare model."""
    cfg = transformers.ElectraConfig(**ENCODER, embedding_size=embedding_size, max_position_embeddings=32)
    cls = {
        "discriminator": transformers.ElectraForPreTraining,
        "generator": transformers.ElectraForMaskedLM,
        "bare": transformers.ElectraModel,
    }[kind]
    return _model(cls, cfg)


def albert(head: bool = True, layers: int = 3, embedding_size: int = 16):
    """ALBERT: factorised embedding (16 -> 32), one layer's weights run 3 times, tanh-GELU, the MLM head back
    to 16 dims scored against the tied word embeddings."""
    cfg = transformers.AlbertConfig(
        **{**ENCODER, "num_hidden_layers": layers}, embedding_size=embedding_size, max_position_embeddings=32
    )
    model, config = _model(transformers.AlbertForMaskedLM if head else transformers.AlbertModel, cfg)
    if head:
        with torch.no_grad():  # a non-zero decoder bias, so the test sees whether it is applied
            model.predictions.bias.normal_(0.0, 0.3)
    return model, config


# name -> (case, the mechanisms it exercises)
BERTISH_CASES = {
    "albert": (
        Case("albert", albert, "encoder-only"),
        "factorised embedding (16 -> 32), one layer's weights shared by 3 layers, MLM head (32 -> 16, tied)",
    ),
    "electra": (
        Case("electra", electra, "encoder-only"),
        "factorised embedding (16 -> 32), discriminator head: one replaced? logit a token",
    ),
    "electra-generator": (
        Case("electra-generator", lambda: electra("generator"), "encoder-only"),
        "factorised embedding, generator MLM head (32 -> 16, tied)",
    ),
    "electra-unfactorised": (
        Case("electra-unfactorised", lambda: electra(embedding_size=32), "encoder-only"),
        "embedding_size = hidden_size: no projection",
    ),
    "xlm-roberta": (Case("xlm-roberta", xlm_roberta, "encoder-only"), "RoBERTa's layout, learned positions offset 2"),
    "camembert": (Case("camembert", camembert, "encoder-only"), "RoBERTa's layout, learned positions offset 2"),
}
