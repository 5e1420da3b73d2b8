"""The registry of tiny Hugging Face fixtures: every fixture module (hf_tiny.py for the first seven families,
one module per later family or group of families) declares its cases in a dict of its own, and this module
alone merges them; nothing is added to another module's dict at import. A new family's fixture module is
listed here, and tests/families/test_family_lists.py fails until every `FAMILIES` model type has a case.

    FAMILY_CASES  name -> (Case, the mechanisms it exercises): test_hf_families.py, test_replay.py,
                  test_present_families.py, benchmarks/family_matrix.py
    ALL_CASES     name -> Case: FAMILY_CASES, hf_tiny.CASES and the encoder / encoder-decoder cases that
                  test_hf_families does not run (MPNet, T5: test_hf_alibi.py, test_hf_t5.py)
"""

from __future__ import annotations

from tests.support import (
    hf_tiny,
    hf_tiny_alibi,
    hf_tiny_bart,
    hf_tiny_bertish,
    hf_tiny_deberta,
    hf_tiny_families,
    hf_tiny_headdim,
    hf_tiny_moe,
    hf_tiny_norms,
)

FAMILY_CASES = {
    **hf_tiny_families.DECODER_CASES,
    **hf_tiny_bart.BART_CASES,  # bart, mbart, pegasus
    **hf_tiny_norms.NORMS_CASES,  # qwen3, olmo2, gemma2, gemma3_text
    **hf_tiny_bertish.BERTISH_CASES,  # xlm-roberta, camembert, electra, albert
    **hf_tiny_deberta.DEBERTA_CASES,  # deberta-v2
    **hf_tiny_moe.MOE_CASES,  # mixtral, falcon
    **hf_tiny_alibi.ALIBI_CASES,  # bloom
    **hf_tiny_headdim.HEADDIM_CASES,  # head_dim x heads != hidden_size
}

ALL_CASES = {
    **hf_tiny.CASES,
    **{name: case for name, (case, _mechanisms) in FAMILY_CASES.items()},
    **{name: case for name, (case, _mechanisms) in hf_tiny_alibi.MPNET_CASES.items()},
    **{name: case for name, (case, _mechanisms) in hf_tiny_alibi.T5_CASES.items()},
}
