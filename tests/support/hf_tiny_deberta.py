"""Tiny random DeBERTa-v2/v3 models built from config objects (never downloaded): disentangled attention with
shared or own position projections, log-bucketed or clamped distances, with and without the relative
embeddings' LayerNorm and absolute positions, both masked-LM head layouts. Appended to
family_cases.FAMILY_CASES (test_hf_families.py, benchmarks/family_matrix.py); test_hf_deberta.py."""

from __future__ import annotations

import transformers

from tests.support.hf_tiny import VOCAB, Case, _model


def deberta(head: str = "legacy", **changes):
    """A 2-layer, 4-head, d32 DeBERTa; `head`: "legacy" (cls.predictions), "new" (lm_predictions) or "none"."""
    settings = {
        "vocab_size": VOCAB,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 48,
        "max_position_embeddings": 32,
        "type_vocab_size": 0,
        "relative_attention": True,
        "pos_att_type": ["p2c", "c2p"],
        "position_biased_input": False,
        "legacy": head != "new",
        **changes,
    }
    cfg = transformers.DebertaV2Config(**settings)
    cls = transformers.DebertaV2Model if head == "none" else transformers.DebertaV2ForMaskedLM
    return _model(cls, cfg)


def v3():
    """DeBERTa-v3's layout: log buckets (6 rows a side, reaching 16), shared keys, LayerNorm on the table."""
    return deberta(position_buckets=6, max_relative_positions=16, share_att_key=True, norm_rel_ebd="layer_norm")


def v2_own_keys():
    """DeBERTa-v2's older layout: own pos_key_proj / pos_query_proj, distances clamped at ±3 (8 tokens reach 7),
    absolute positions added too, token types, the new masked-LM head."""
    return deberta(
        head="new", max_relative_positions=3, position_biased_input=True, type_vocab_size=2, pos_att_type="c2p|p2c"
    )


def c2p_only():
    """Only content → position (scale factor 2), no head; d 48 (dₖ 12: √(2·12) is not a power of two)."""
    return deberta(
        head="none", pos_att_type=["c2p"], max_relative_positions=5, norm_rel_ebd="layer_norm", hidden_size=48
    )


DEBERTA_CASES = {
    "deberta-v3": (
        Case("deberta-v3", v3, "encoder-only"),
        "disentangled attention c2c + c2p + p2c ÷ √(3dₖ), log buckets, shared W_Q/W_K, rel-embedding LayerNorm",
    ),
    "deberta-v2-own-keys": (
        Case("deberta-v2-own-keys", v2_own_keys, "encoder-only"),
        "own position projections, distances clamped at ±3, absolute positions too, lm_predictions head",
    ),
    "deberta-c2p-only": (
        Case("deberta-c2p-only", c2p_only, "encoder-only", has_logits=False),
        "pos_att_type c2p only: ÷ √(2dₖ), dₖ 12, no head",
    ),
}
