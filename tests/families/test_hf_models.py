"""End to end: tiny random Hugging Face models of every supported model_type, built from config objects with
`transformers` (nothing downloaded), saved with save_pretrained next to their tokenizer files, opened with
attnlab.load(folder) and compared with transformers' eager forward: token ids, every layer's per-head
attention weights, every layer's hidden state and the logits, to 1e-4 in float32.

Turns on when attnlab.checkpoints.hf has `convert` (the converters live there)."""

from __future__ import annotations

import json

import pytest
import torch

import attnlab

transformers = pytest.importorskip("transformers")
hf = pytest.importorskip("attnlab.checkpoints.hf")
if not hasattr(hf, "convert"):
    pytest.skip("attnlab.checkpoints.hf has no convert yet", allow_module_level=True)

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

ATOL = 1e-4
SENTENCES = ["Hello, world! The cat sat.", "It costs $3.14 (42 euros).", "Café déjà vu 😀"]
CORPUS = [s * 2 for s in SENTENCES] * 30 + ["the quick brown fox jumps over the lazy dog"] * 30
SMALL = dict(hidden=32, heads=4, layers=2, ffn=64, positions=64)


# ---- tokenizer files ------------------------------------------------------------------------------------
def byte_level_bpe(folder, specials: list[str], vocab_size=300) -> int:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        CORPUS,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok.model.save(str(folder))
    return tok


def wordpiece_vocab(folder) -> int:
    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.train_from_iterator(
        [s.lower() for s in CORPUS],
        trainers.WordPieceTrainer(
            vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False
        ),
    )
    vocab = sorted(wp.get_vocab().items(), key=lambda kv: kv[1])
    (folder / "vocab.txt").write_text("\n".join(t for t, _ in vocab) + "\n", encoding="utf-8")
    return len(vocab)


def tokenizer_config(folder, **fields):
    (folder / "tokenizer_config.json").write_text(json.dumps(fields))


def fast_tokenizer_folder(folder, specials: dict, **config) -> int:
    """tokenizer.json + tokenizer_config.json through transformers' own writer."""
    tok = byte_level_bpe(folder, sorted(set(specials.values())))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, **specials, **config)
    fast.save_pretrained(str(folder))
    return tok.get_vocab_size()


# ---- tiny models ----------------------------------------------------------------------------------------
def gpt2(folder):
    byte_level_bpe(folder, ["<|endoftext|>"])
    tokenizer_config(folder, tokenizer_class="GPT2Tokenizer")
    size = len(json.loads((folder / "vocab.json").read_text()))
    cfg = transformers.GPT2Config(
        vocab_size=size, n_embd=32, n_head=4, n_layer=2, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    return transformers.GPT2LMHeadModel(cfg)


def bert(folder):
    size = wordpiece_vocab(folder)
    tokenizer_config(folder, tokenizer_class="BertTokenizer", do_lower_case=True)
    cfg = transformers.BertConfig(
        vocab_size=size,
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return transformers.BertForMaskedLM(cfg)


def distilbert(folder):
    size = wordpiece_vocab(folder)
    tokenizer_config(folder, tokenizer_class="DistilBertTokenizer", do_lower_case=True)
    cfg = transformers.DistilBertConfig(
        vocab_size=size, dim=32, n_heads=4, n_layers=2, hidden_dim=64, max_position_embeddings=64
    )
    return transformers.DistilBertForMaskedLM(cfg)


def roberta(folder):
    byte_level_bpe(folder, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer_config(folder, tokenizer_class="RobertaTokenizer")
    size = len(json.loads((folder / "vocab.json").read_text()))
    cfg = transformers.RobertaConfig(
        vocab_size=size,
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=66,
        pad_token_id=1,
    )
    return transformers.RobertaForMaskedLM(cfg)


def llama(folder):
    size = fast_tokenizer_folder(
        folder, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, add_bos_token=True
    )
    cfg = transformers.LlamaConfig(
        vocab_size=size,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=64,
        rope_theta=500.0,
        bos_token_id=0,
        eos_token_id=1,
    )
    return transformers.LlamaForCausalLM(cfg)


def qwen2(folder):
    size = fast_tokenizer_folder(folder, {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"})
    cfg = transformers.Qwen2Config(
        vocab_size=size,
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_hidden_layers=2,
        intermediate_size=64,
        max_position_embeddings=64,
        rope_theta=10000.0,
        tie_word_embeddings=False,
    )
    cfg.save_pretrained(str(folder))  # Qwen2's own tokenizer class rewrites tokenizer.json (digits one by one)
    transformers.AutoTokenizer.from_pretrained(str(folder)).save_pretrained(str(folder))
    return transformers.Qwen2ForCausalLM(cfg)


def marian(folder):
    spm = pytest.importorskip("sentencepiece")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(CORPUS * 3), encoding="utf-8")
    for name in ("source", "target"):
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(folder / name),
            vocab_size=70,
            hard_vocab_limit=False,
            character_coverage=1.0,
            bos_id=-1,
            eos_id=-1,
            unk_id=0,
            minloglevel=2,
        )
        (folder / f"{name}.model").rename(folder / f"{name}.spm")
    vocab = {"</s>": 0, "<unk>": 1}
    for line in (folder / "source.vocab").read_text(encoding="utf-8").splitlines():
        vocab.setdefault(line.split("\t")[0], len(vocab))
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tokenizer_config(folder, tokenizer_class="MarianTokenizer")
    cfg = transformers.MarianConfig(
        vocab_size=len(vocab),
        d_model=32,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_layers=2,
        decoder_layers=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        pad_token_id=vocab["<pad>"],
        decoder_start_token_id=vocab["<pad>"],
        eos_token_id=0,
    )
    return transformers.MarianMTModel(cfg)


BUILDERS = {
    "gpt2": gpt2,
    "bert": bert,
    "distilbert": distilbert,
    "roberta": roberta,
    "llama": llama,
    "qwen2": qwen2,
    "marian": marian,
}


def saved(tmp_path, kind):
    folder = tmp_path / kind
    folder.mkdir()
    torch.manual_seed(0)
    reference = BUILDERS[kind](folder).eval()
    reference.save_pretrained(str(folder))
    return folder, reference


def close(ours, theirs, what):
    assert ours.shape == theirs.shape, f"{what}: {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    diff = (ours - theirs).abs().max().item()
    assert diff <= ATOL, f"{what}: max abs difference {diff:.2e}"


def compare_stack(t, stack: str, attentions, hidden_states, site="self"):
    """Every layer's [H, T, T] weights; hidden states after each layer (the last one after the final norm)."""
    n = len(attentions)
    for i in range(n):
        close(t[f"{stack}.{i}.{site}.weights"], attentions[i][0], f"{stack}.{i}.{site}.weights")
    for i in range(n - 1):
        close(t[f"{stack}.{i}.out"], hidden_states[i + 1][0], f"{stack}.{i}.out")
    close(t[f"{stack}.out"], hidden_states[-1][0], f"{stack}.out")


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2"])
def test_decoder_only_models_match_transformers(tmp_path, kind):
    folder, reference = saved(tmp_path, kind)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = attnlab.load(folder)
    for text in SENTENCES:
        t = model.trace(text)
        ids = auto(text)["input_ids"]
        assert t["tgt.ids"].tolist() == ids, text
        with torch.no_grad():
            out = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        compare_stack(t, "dec", out.attentions, out.hidden_states)
        close(t["logits"], out.logits[0], "logits")


@pytest.mark.parametrize("kind", ["bert", "distilbert", "roberta"])
def test_encoder_only_models_match_transformers_with_mask_predictions(tmp_path, kind):
    folder, reference = saved(tmp_path, kind)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = attnlab.load(folder)
    for text in SENTENCES + [f"the {auto.mask_token} sat."]:
        t = model.trace(text)
        ids = auto(text)["input_ids"]
        assert t["src.ids"].tolist() == ids, text
        with torch.no_grad():
            out = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        compare_stack(t, "enc", out.attentions, out.hidden_states)
        close(t["logits"], out.logits[0], "logits")  # the masked-LM head: [MASK] predictions


def test_marian_matches_transformers(tmp_path):
    folder, reference = saved(tmp_path, "marian")
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = attnlab.load(folder)
    src, tgt = "the quick brown fox", "the lazy dog"
    t = model.trace(src, tgt)
    src_ids = auto(src)["input_ids"]
    tgt_ids = [reference.config.decoder_start_token_id] + auto(text_target=tgt)["input_ids"][:-1]  # no </s>
    assert t["src.ids"].tolist() == src_ids and t["tgt.ids"].tolist() == tgt_ids
    with torch.no_grad():
        out = reference(
            input_ids=torch.tensor([src_ids]),
            decoder_input_ids=torch.tensor([tgt_ids]),
            output_attentions=True,
            output_hidden_states=True,
        )
    compare_stack(t, "enc", out.encoder_attentions, out.encoder_hidden_states)
    compare_stack(t, "dec", out.decoder_attentions, out.decoder_hidden_states)
    for i, cross in enumerate(out.cross_attentions):
        close(t[f"dec.{i}.cross.weights"], cross[0], f"dec.{i}.cross.weights")
    close(t["logits"], out.logits[0], "logits")


def test_model_info_says_where_settings_came_from(tmp_path):
    folder, _ = saved(tmp_path, "gpt2")
    model = attnlab.load(folder)
    settings = model.metadata["settings"]
    assert settings["d_model"] == {"value": 32, "source": "config.json (n_embd)"}
    assert "vocab.json + merges.txt" in model.metadata["tokenizer"]
