"""The view-models of the input stages (present/views/inputs.py, positional.py) hold the trace's numbers and
agree with torch: the chips are the tokenizer's pieces and ids, the embedding is the embedding table's rows
(× √d), the layer input is embedding + position, the sinusoidal table is the textbook formula — and their
sentences say what the run did (specials counted, position switched off)."""

import math

import numpy as np
import pytest
import torch

from attnlab.engine.options import RunOptions
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stages_for
from attnlab.present.views.inputs import POSITION_OFF_TITLE, EmbedView, InputSumView, TokensView
from attnlab.present.views.model import MessageView
from attnlab.present.views.positional import NONE_ADDED, SWITCHED_OFF, PositionalView

SRC, TGT = "the black cat sees the dog", "le chat noir"


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", n_encoder_layers=1, n_decoder_layers=1)


@pytest.fixture(scope="module")
def trace(model):
    return model.trace(SRC, TGT)


def view_of(trace, key: str, display: ViewState | None = None):
    stage = next(s for s in stages_for(trace) if s.key == key)
    return view_for(trace, stage, display or ViewState())


def entry(trace, name: str) -> np.ndarray:
    return trace[name].detach().float().numpy()


def test_token_chips_are_the_tokenizers_pieces_and_ids(model, trace):
    for side in ("src", "tgt"):
        view = view_of(trace, f"{side}.tokens")
        assert isinstance(view, TokensView)
        ids = [int(i) for i in trace.numpy(f"{side}.ids")]
        assert view.ids == ids and view.pieces == list(trace[f"{side}.tokens"])
        assert view.pieces == [model.src_tokenizer.id_to_token(i) for i in ids]
        assert [c.position for c in view.chips] == list(range(len(ids)))
        specials = [c.piece for c in view.chips if c.kind != "word"]
        assert specials and all(p.startswith("<") for p in specials)
        assert view.count == (
            f"{len(ids)} tokens: {len(ids) - len(specials)} from the text + {len(specials)} special "
            f"({', '.join(dict.fromkeys(specials))})"
        )
        assert "Dashed chips are special tokens" in view.legend
    assert view_of(trace, "src.tokens").title.startswith("Source:")


def test_a_blank_piece_is_made_visible_on_its_chip(trace):
    from attnlab.present.labels import printable_label
    from attnlab.present.views.inputs import chip_kind

    assert printable_label(" ") == "␣" and printable_label("a\nb") == "a\\nb"
    assert [chip_kind(p) for p in ("<pad>", "<unk>", "</s>", "cat")] == ["pad", "unk", "special", "word"]


def test_embedding_is_the_tables_rows_times_sqrt_d(model, trace):
    view = view_of(trace, "src.embed")
    assert isinstance(view, EmbedView)
    ids = torch.as_tensor(trace.numpy("src.ids")).long()
    table = model.module.src_embed.weight.detach()  # [V, d]
    d = table.shape[1]
    expected = table[ids] * math.sqrt(d)  # scale_embedding: x √d_model
    np.testing.assert_allclose(view.matrix.matrix, expected.numpy(), rtol=1e-6, atol=1e-6)
    assert view.matrix.matrix.dtype == np.float32 and view.matrix.matrix.flags.c_contiguous
    assert view.matrix.rows == list(trace["src.tokens"])
    assert view.matrix.title == f"source embeddings · {len(ids)} tokens × {d} dimensions"


def textbook_sinusoid(t: int, d: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same)  # [T, d]"""
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    i2 = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, i2 / d)  # [T, d/2]
    pe = torch.empty(t, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return pe


def test_layer_input_is_embedding_plus_the_textbook_sinusoid(trace):
    view = view_of(trace, "src.input")
    assert isinstance(view, InputSumView)
    embed, x = entry(trace, "src.embed"), entry(trace, "src.input")  # [T, d]
    pe = textbook_sinusoid(*x.shape).float().numpy()
    np.testing.assert_allclose(view.added.matrix, pe, atol=1e-5)
    np.testing.assert_allclose(view.input.matrix, embed + pe, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(view.embed.matrix, embed)
    bound = max(np.abs(embed).max(), np.abs(pe).max(), np.abs(x).max())
    assert view.input.levels == pytest.approx((-bound, bound)) and view.embed.levels == view.input.levels
    assert view.operator == "=" and view.token_type is None and not view.embed_norm
    assert f"({x.shape[0]} × {x.shape[1]} each" in view.note.text and len(view.note.alternatives) == 2


def test_position_switched_off_adds_zeros_and_says_so(model):
    trace = model.trace(SRC, TGT, RunOptions(positional=False))
    view = view_of(trace, "src.input")
    assert view.added.title == POSITION_OFF_TITLE and not view.added.matrix.any()
    assert view.pos_values is None
    np.testing.assert_array_equal(view.input.matrix, view.embed.matrix)  # nothing added
    assert view.note.text == view.note.alternatives[1] and "No positional table" in view.note.text
    positional = view_of(trace, "src.pos")
    assert isinstance(positional, MessageView) and positional.message == SWITCHED_OFF


def test_positional_view_is_the_sinusoid_and_its_curves(trace):
    view = view_of(trace, "src.pos", ViewState(pe_dims=(0, 1, 1, 5, 999)))
    assert isinstance(view, PositionalView) and view.encoding == "sinusoidal"
    t, d = view.matrix.matrix.shape
    np.testing.assert_allclose(view.matrix.matrix, textbook_sinusoid(t, d).numpy(), atol=1e-5)
    assert view.dims == [0, 1, 5]  # repeats once, a dimension past d_model dropped
    for curve in view.curves:
        np.testing.assert_array_equal(curve.values, view.matrix.matrix[:, curve.dim])
        exact = textbook_sinusoid(t, d)  # the fine curve passes through the recorded values at the tokens
        np.testing.assert_allclose(curve.ys[::12], exact[:, curve.dim].numpy(), atol=1e-5)
    period = 2 * math.pi * 10000 ** (4 / d)
    assert view.curves[2].legend == f"dim 5 (cos, period {period:.3g})"
    assert view.note.startswith("PE(pos, 2i) = sin(pos / 10000^(2i/d))")


def test_learned_and_rotary_positions_are_told_apart(tiny_model):
    learned = tiny_model("decoder-only", positional="learned").trace(SRC)
    view = view_of(learned, "tgt.pos")
    assert view.encoding == "learned" and view.note.startswith("This model learned its position table")
    np.testing.assert_array_equal(view.curves[0].ys, entry(learned, "tgt.pos")[:, 0])
    rotary = tiny_model("decoder-only", positional="rotary").trace(SRC)
    stage = next(s for s in stages_for(learned) if s.key == "tgt.pos")
    shown = view_for(rotary, stage, ViewState())
    assert isinstance(shown, MessageView) and shown.message == NONE_ADDED


def test_bert_like_input_adds_the_token_type_then_torchs_layernorm(tiny_model):
    model = tiny_model("encoder-only", type_vocab_size=2, embed_norm=True, positional="learned")
    trace = model.trace(SRC)
    view = view_of(trace, "src.input")
    embed, pos, token_type = (entry(trace, f"src.{part}") for part in ("embed", "pos", "type"))  # [T, d] each
    np.testing.assert_allclose(view.added.matrix, pos + token_type, rtol=1e-6)
    np.testing.assert_array_equal(view.token_type, token_type)
    norm = model.module.src_embed_norm  # the embedding LayerNorm's own γ, β and ε
    expected = torch.nn.functional.layer_norm(
        torch.from_numpy(embed + pos + token_type),
        (embed.shape[1],),
        norm.weight,
        norm.bias,
        model.config.layer_norm_eps,
    )
    np.testing.assert_allclose(view.input.matrix, expected.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert view.embed_norm and view.operator == "→ LayerNorm →"
    assert view.added.title == "position + token type" and view.input.title == "LayerNorm(sum) = layer input"
    assert view.note.text.startswith("Token embedding + position + token type") and not view.note.alternatives
