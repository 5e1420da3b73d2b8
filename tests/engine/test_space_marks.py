"""Byte-level and SentencePiece pieces shown with a visible space mark (issue 32, item 9): `␣quick` instead of
GPT-2's "Ġquick" or SentencePiece's "▁quick", the same in token chips, axis labels and hover readouts, from one
function (present/labels.py), and a readout that names query, key and weight."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.hf_tokenizer import LibraryTokenizer
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.specials import Specials
from attnlab.present.labels import cell_readout, elide_label, printable_label, spaced_piece
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.views.inputs import tokens_view

CORPUS = ["the quick brown fox jumps over the lazy dog", "a sentence and another sentence", "the dog  sleeps\nhere"]
TEXT = "the quick fox and the  dog"


def byte_level() -> Tokenizer:
    """A GPT-2-style byte-level BPE (spaces become Ġ inside pieces), trained on CORPUS."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def sentencepiece() -> Tokenizer:
    """A SentencePiece-style Unigram (spaces become ▁), trained on CORPUS."""
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=80, special_tokens=["<unk>"], unk_token="<unk>"))
    return tok


def test_byte_level_pieces_show_the_space_they_stand_for():
    tok = byte_level()
    pieces = tok.encode(TEXT).tokens
    assert any(p.startswith("Ġ") and len(p) > 1 for p in pieces) and "Ġ" in pieces  # a chip that is only a space
    for piece in pieces:
        spelled = tok.decoder.decode([piece])  # the tokenizer's own reading of the piece: " quick"
        assert printable_label(piece) == spelled.replace(" ", "␣"), piece
    assert elide_label("Ġthe → Ġthe") == "␣the → ␣the"  # a decoder row: both sides


def test_sentencepiece_pieces_show_the_space_they_stand_for():
    pieces = sentencepiece().encode(TEXT).tokens
    assert any(p.startswith("▁") for p in pieces)
    for piece in pieces:
        assert printable_label(piece) == piece.replace("▁", "␣")


def test_a_mark_inside_a_word_and_other_letters_stay():
    assert spaced_piece("ĠĠ") == "  " and printable_label("ĠĠ") == "␣␣"
    assert printable_label("Ċ") == "\\n"  # a byte-level newline piece
    assert printable_label("chat") == "chat" and printable_label("aĠb") == "aĠb" and printable_label("ĉar") == "ĉar"


def test_the_readout_names_query_key_and_weight():
    text = cell_readout((3, "Ġsentence → ."), (1, "Ġand"), "0.31", ("query", "key", "weight"))
    assert text == "query ␣sentence (3), predicting . · key ␣and (1) · weight 0.31"
    assert cell_readout((0, None), (2, None), "7") == "row 0 · column 2 · value 7"


@pytest.fixture(scope="module")
def gpt2_style():
    """A tiny random decoder-only model reading through the byte-level tokenizer."""
    tok = LibraryTokenizer(byte_level(), Specials(eos=0))
    config = ModelConfig(
        arch="decoder-only", tgt_vocab_size=tok.vocab_size, src_vocab_size=tok.vocab_size, d_model=32, n_heads=4,
        d_ff=64, n_encoder_layers=0, n_decoder_layers=1, max_len=32,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LiveModel(Transformer(config), tok, tok, name="gpt2-style")
    return model, model.trace(None, TEXT)


def test_chips_axes_and_readouts_of_a_byte_level_model(qtbot, gpt2_style):
    from attnlab.ui.stages.attention import AttentionMapPanel

    _model, trace = gpt2_style
    pieces = list(trace["tgt.tokens"])
    assert any(p.startswith("Ġ") for p in pieces)
    stages = {s.key: s for s in stages_for(trace)}
    chips = tokens_view(trace, stages["tgt.tokens"], ViewState()).chips
    assert [c.printable for c in chips] == [p.replace("Ġ", "␣") for p in pieces]

    panel = AttentionMapPanel()
    qtbot.addWidget(panel)
    panel.resize(700, 560)
    panel.show()
    qtbot.waitExposed(panel)
    key = names.site_entry("dec.0.self", "weights")
    panel.show_stage(trace, stages[key], ViewState())
    heatmap = panel._map
    assert heatmap._bottom._labels == [elide_label(p.replace("Ġ", "␣")) for p in pieces]
    assert not any("Ġ" in label for label in heatmap._left._labels)
    q = next(i for i, p in enumerate(pieces) if p.startswith("Ġ"))
    readout = heatmap.describe_cell(q, 0)
    weight = float(trace[key][0, q, 0])
    # the roles read as the axes are titled: 'decoder query' / 'decoder key' (present/views/site.py axis_title)
    assert readout.startswith(f"decoder query {pieces[q].replace('Ġ', '␣')} ({q})") and "Ġ" not in readout
    assert readout.endswith(f"· decoder key {pieces[0]} (0) · weight {weight:.4g}")
