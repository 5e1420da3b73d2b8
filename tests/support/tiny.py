"""The suite's one tiny model and the helpers around it, importable by any test module (conftest.py holds
only fixtures): `build_tiny_model` (d_model 32, 4 heads, 2+2 layers, max_len 32, a word tokenizer trained on
TEXTS; keyword arguments change any ModelConfig field), `assert_same_trace`, `shown_widget`, and the sentence
the window tests open with."""

from __future__ import annotations

import torch

from attnlab.engine.config import ModelConfig
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.tokenizer import WordTokenizer

TEXTS = ["the black cat sees the small dog", "le chat noir voit le petit chien", "dog bites man"]
TINY_SIZES = dict(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, max_len=32)


def build_tiny_model(
    arch: str = "encoder-decoder",
    seed: int = 0,
    *,
    never_ends: bool = False,
    texts: list[str] | None = None,
    **config_changes,
) -> LiveModel:
    """A random model with a word tokenizer trained on `texts`. `never_ends`: an untied output layer whose
    bias rules out </s>, so Generate always appends a token."""
    tok = WordTokenizer.train(texts or TEXTS)
    vocab = {"src_vocab_size": tok.vocab_size, "tgt_vocab_size": tok.vocab_size}  # a change may make one larger
    sizes = {**vocab, **TINY_SIZES, **({"tie_output": False} if never_ends else {}), **config_changes}
    cfg = ModelConfig(arch=arch, **sizes)
    torch.manual_seed(seed)
    module = Transformer(cfg)
    if never_ends:
        with torch.no_grad():
            module.out_proj.bias[tok.eos_id] = -1e4
    return LiveModel(module, tok, tok, name=f"tiny-{arch}")


def assert_same_trace(a, b) -> None:
    """Two traces hold the same entries to the last bit (tolerance 0): the same names in the same order, equal
    token lists, and tensors of one dtype and shape with NaN and ±inf in the same places."""
    assert a.names() == b.names()
    for name in a.names():
        x, y = a[name], b[name]
        if isinstance(x, list):
            assert x == y, name
        else:
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert torch.equal(x.isnan(), y.isnan()) and torch.equal(x.nan_to_num(), y.nan_to_num()), name


def shown_widget(qtbot, widget, width: int, height: int):
    """`widget` handed to qtbot (closed after the test), at width × height, shown and exposed: the start of a
    test that paints it."""
    qtbot.addWidget(widget)
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


WINDOW_WAIT_MS = 20000  # the first trace of a window, on a busy CI machine
WINDOW_SRC, WINDOW_TGT = "the black cat sees the dog", "le chat"  # the sentence the window tests open with
