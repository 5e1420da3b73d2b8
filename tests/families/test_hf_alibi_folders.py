"""Folders as transformers saves them (tiny random models + their tokenizers), opened by attnlab: a T5 folder
with a SentencePiece spiece.model (the source box feeds the encoder, the target box the decoder, which starts
from <pad>, decoder_start_token_id) and a BLOOM folder with a byte-level tokenizer.json. The ids equal
AutoTokenizer's and every map, hidden state and logit equals transformers' on them."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")
sentencepiece = pytest.importorskip("sentencepiece")
pytest.importorskip("google.protobuf")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

import attnlab  # noqa: E402
from tests.families.test_hf_models import close, compare_stack  # noqa: E402
from tests.support import tokenizer_layouts as L  # noqa: E402

T5_SPM = {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1}


def t5_folder(folder, feed_forward_proj: str, as_json: bool = False):
    """spiece.model, or (as_json) the tokenizer.json transformers writes for it, which lists the 100 sentinels."""
    source = folder / "source" if as_json else folder
    source.mkdir(exist_ok=True)
    L.sentencepiece_model(source, "spiece.model", "t5", "unigram", **T5_SPM)
    pieces = sentencepiece.SentencePieceProcessor(model_file=str(source / "spiece.model")).get_piece_size()
    if as_json:
        L.saved_by_transformers(source, folder, "t5")
    cfg = transformers.T5Config(
        vocab_size=pieces + 100,  # T5Tokenizer adds 100 <extra_id_*> sentinels after the pieces
        d_model=32,
        d_kv=8,
        d_ff=48,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=6,
        feed_forward_proj=feed_forward_proj,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(cfg).eval()
    with torch.no_grad():  # a spread far from the 0.02-ish init, so a wrong mapping shows in the numbers
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    model.save_pretrained(str(folder))
    return model


@pytest.mark.parametrize(("feed_forward_proj", "as_json"), [("relu", False), ("gated-gelu", True)])
def test_a_saved_t5_folder_opens_and_agrees(tmp_path, feed_forward_proj, as_json):
    reference = t5_folder(tmp_path, feed_forward_proj, as_json)
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    model = attnlab.load(tmp_path)
    src, tgt = "the quick brown fox jumps over the lazy dog", "a quick fox"
    t = model.trace(src, tgt)
    src_ids = auto(src)["input_ids"]
    tgt_ids = [0] + auto(text_target=tgt)["input_ids"][:-1]  # decoder_start_token_id = <pad>, no </s>
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


def bloom_folder(folder):
    """A byte-level BPE tokenizer.json (BLOOM ships no vocab.json) and a 6-head BloomForCausalLM."""
    L.byte_level_vocab(folder, "bloom", ["<unk>", "<s>", "</s>", "<pad>"], "BloomTokenizer")
    tok = Tokenizer(models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(folder / "tokenizer.json"))
    for name in ("vocab.json", "merges.txt"):
        (folder / name).unlink()
    specials = {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}
    L.write_json(folder / "tokenizer_config.json", {"tokenizer_class": "BloomTokenizer", **specials})
    cfg = transformers.BloomConfig(vocab_size=tok.get_vocab_size(), hidden_size=48, n_layer=2, n_head=6)
    torch.manual_seed(0)
    model = transformers.BloomForCausalLM(cfg).eval()
    model.save_pretrained(str(folder))
    return model


def test_a_saved_bloom_folder_opens_and_agrees(tmp_path):
    reference = bloom_folder(tmp_path)
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    model = attnlab.load(tmp_path)
    for text in L.SENTENCES:
        t = model.trace(text)
        ids = auto(text)["input_ids"]
        assert t["tgt.ids"].tolist() == ids, text
        with torch.no_grad():
            out = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        compare_stack(t, "dec", out.attentions, out.hidden_states)
        close(t["logits"], out.logits[0], "logits")


MPNET_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"]


def mpnet_vocab(folder, as_json: bool):
    """An MPNetTokenizer folder: a lower-cased WordPiece vocab.txt (or the tokenizer.json transformers writes)."""
    from tokenizers import trainers

    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=MPNET_SPECIALS, show_progress=False)
    wp.train_from_iterator([s.lower() for s in L.CORPUS], trainer)
    vocab = sorted(wp.get_vocab().items(), key=lambda kv: kv[1])
    (folder / "vocab.txt").write_text("\n".join(t for t, _ in vocab) + "\n", encoding="utf-8")
    L.write_json(folder / "tokenizer_config.json", {"tokenizer_class": "MPNetTokenizer", "do_lower_case": True})
    L.config(folder, "mpnet")
    if as_json:
        source = folder / "source"
        source.mkdir()
        for name in ("vocab.txt", "tokenizer_config.json", "config.json"):
            (folder / name).rename(source / name)
        L.saved_by_transformers(source, folder, "mpnet")
    return len(vocab)


@pytest.mark.parametrize("as_json", [False, True], ids=["vocab.txt", "tokenizer.json"])
def test_a_saved_mpnet_folder_opens_and_agrees_with_its_mask_predictions(tmp_path, as_json):
    vocab = mpnet_vocab(tmp_path, as_json)
    cfg = transformers.MPNetConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48
    )
    torch.manual_seed(0)
    reference = transformers.MPNetForMaskedLM(cfg).eval()
    reference.save_pretrained(str(tmp_path))
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    model = attnlab.load(tmp_path)
    for text in [*L.SENTENCES, f"the {auto.mask_token} sat."]:
        t = model.trace(text)
        ids = auto(text)["input_ids"]
        assert t["src.ids"].tolist() == ids, text
        with torch.no_grad():
            out = reference(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        compare_stack(t, "enc", out.attentions, out.hidden_states)
        close(t["logits"], out.logits[0], "logits")
    a, b = L.SENTENCES[0], L.SENTENCES[1]
    tok = model.src_tokenizer
    assert tok.specials.wrap_pair(tok.encode(a)[1], tok.encode(b)[1])[0] == auto(a, b)["input_ids"]


def test_t5_greedy_generation_equals_transformers_generate(tmp_path):
    """Generation for an imported T5 (issue 25): attnlab's greedy steps, from decoder_start_token_id (<pad>), give
    transformers' generate(do_sample=False, num_beams=1) ids, with the cross-attention recorded at every step."""
    reference = t5_folder(tmp_path, "gated-gelu", as_json=True)
    reference.generation_config.forced_eos_token_id = None
    model = attnlab.load(tmp_path)
    traces = list(model.generate("the quick brown fox jumps over the lazy dog", max_new_tokens=8))
    last = traces[-1]
    ours = [int(i) for i in last["tgt.ids"]] + [last.info["next_id"]]
    src = torch.tensor([[int(i) for i in traces[0]["src.ids"]]])  # [1, S]
    with torch.no_grad():
        theirs = reference.generate(src, do_sample=False, num_beams=1, max_new_tokens=len(ours) - 1)[0].tolist()
    assert ours == theirs and ours[0] == 0 and len(ours) > 3
    for step in traces:  # each step's cross-attention: one row per decoder position, over the source
        assert tuple(step["dec.1.cross.weights"].shape) == (4, len(step["tgt.ids"]), src.shape[1])
