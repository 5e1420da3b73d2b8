"""A small random GPT-2 folder that reads the indirect-object sentences (issue 37's worked example): transformers'
GPT2LMHeadModel saved with save_pretrained, and a byte-level BPE tokenizer trained on the sentences, so that
" Mary" and " John" are one token each. Nothing is downloaded. Used by tests/commands/test_trace_patch.py and
for the README's example:

    python -c "from tests.support.ioi_gpt2 import write_ioi_gpt2; write_ioi_gpt2('ioi-gpt2')"
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

CLEAN = "When Mary and John went to the store, John gave a drink to"  # run A: the answer is " Mary"
CORRUPTED = "When Mary and John went to the store, Mary gave a drink to"  # run B: the answer is " John"
NAMES = (" Mary", " John")
CORPUS = [CLEAN, CORRUPTED, "When John and Mary went to the park, Mary gave a book to John"] * 20
EOS = "<|endoftext|>"


def write_ioi_gpt2(folder: str | Path, layers: int = 4, width: int = 64, heads: int = 4, seed: int = 0) -> Path:
    """Write the folder (config.json, model.safetensors, tokenizer.json, tokenizer_config.json); its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.save(str(folder / "tokenizer.json"))
    eos = tok.token_to_id(EOS)
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "GPT2TokenizerFast", "eos_token": EOS, "bos_token": EOS})
    )
    config = transformers.GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=64,
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        bos_token_id=eos,
        eos_token_id=eos,
    )
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # a larger spread than the 0.02 init, so the two names' logits differ visibly
        for name, p in model.named_parameters():
            if not name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.normal_(0.0, 0.2)
    model.save_pretrained(str(folder), safe_serialization=True)
    return folder
