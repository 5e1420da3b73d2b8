"""Tiny random Hugging Face models of the BERT-like encoders beyond BERT, RoBERTa and DistilBERT (XLM-RoBERTa,
CamemBERT, ELECTRA, ALBERT), built from config objects like hf_tiny.py's (never downloaded). Appended to
hf_tiny_families.FAMILY_CASES; used by test_hf_bertish.py, test_hf_families.py and benchmarks/family_matrix.py."""

from __future__ import annotations

import transformers
from hf_tiny import VOCAB, Case, _model

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


# name -> (case, the mechanisms it exercises)
BERTISH_CASES = {
    "xlm-roberta": (Case("xlm-roberta", xlm_roberta, "encoder-only"), "RoBERTa's layout, learned positions offset 2"),
    "camembert": (Case("camembert", camembert, "encoder-only"), "RoBERTa's layout, learned positions offset 2"),
}
