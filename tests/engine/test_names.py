"""The names module: every trace entry a run records is built by it and read back by its parsers."""

from __future__ import annotations

import pytest

from attnlab.checkpoints.bundled import random_model
from attnlab.engine import names
from attnlab.engine.config import ModelConfig
from attnlab.engine.options import RunOptions
from attnlab.present import words


def test_builders_spell_the_golden_scheme():
    layer = names.layer("dec", 1)
    assert layer == "dec.1"
    assert names.site_entry(names.site(layer, "cross"), "weights") == "dec.1.cross.weights"
    assert names.norm_entry(names.norm(layer, 3), "mean") == "dec.1.norm3.mean"
    assert names.ffn_entry(layer, "hidden") == "dec.1.ffn.hidden"
    assert names.resid(layer, 2) == "dec.1.resid2"
    assert names.side_entry("src", "tokens") == "src.tokens"
    assert names.stack_norm("enc") == "enc.norm" and names.stack_out("enc") == "enc.out"


@pytest.mark.parametrize("bad", ["enc.0", "enc.x.self", "mid.0.self", "enc.0.cross.weights", "", "enc.0.other"])
def test_split_site_refuses_what_is_not_a_site(bad):
    with pytest.raises(ValueError, match="not an attention site"):
        names.split_site(bad)


def test_readers_invert_the_builders():
    assert names.split_site("dec.12.cross") == ("dec", 12, "cross")
    assert names.site_kind("dec.2.self") == "dec.self"
    assert names.site_of("enc.3.self.masked") == "enc.3.self"
    assert names.site_of("enc.3.norm1.out") is None
    assert names.layer_of("dec.1.norm2.mean") == "dec.1" and names.layer_of("logits") is None


def test_words_people_read():
    assert words.layer_words("enc.0") == "Encoder layer 1"
    assert words.site_words("dec.0.self", causal=True) == "masked self-attention"
    assert words.sublayer_words("dec", 2, has_cross=True) == "cross-attention"
    assert words.sublayer_words("dec", 2, has_cross=False) == words.word("ffn")


@pytest.mark.parametrize("arch", ["encoder-decoder", "decoder-only", "encoder-only"])
def test_every_recorded_site_parses_and_the_trace_carries_its_run(arch):
    config = ModelConfig(
        arch=arch,
        d_model=16,
        n_heads=2,
        d_ff=32,
        n_encoder_layers=2,
        n_decoder_layers=2,
        src_vocab_size=40,
        tgt_vocab_size=40,
        max_len=32,
    )
    model = random_model(config, seed=1)
    trace = model.trace("a b c", "a b" if arch == "encoder-decoder" else None, RunOptions(norm="pre", n_heads=4))
    assert trace.sites(), "a run records at least one attention site"
    for site in trace.sites():
        names.split_site(site)
        for step in names.SITE_STEPS:
            assert names.site_entry(site, step) in trace
    assert trace.config == model.config
    assert (
        trace.options.norm == "pre" and trace.options.n_heads == 4 and trace.n_heads == 4 and trace.options.norm_first
    )
    trained = model.trace("a b", None if arch != "encoder-decoder" else "a")
    assert trained.options.norm == ("pre" if config.norm_first else "post") and trained.n_heads == 2


def test_sublayers_sides_and_words():
    assert [names.sublayer_kind("dec", n, has_cross=True) for n in (1, 2, 3)] == ["self", "cross", "ffn"]
    assert [names.sublayer_kind("enc", n, has_cross=False) for n in (1, 2)] == ["self", "ffn"]
    assert names.sublayer_out("dec.1", 2, has_cross=True) == "dec.1.cross.out"
    assert names.sublayer_out("dec.1", 2, has_cross=False) == "dec.1.ffn.out"
    assert [names.stack_side(s) for s in names.STACKS] == ["src", "tgt"]
    assert [names.side_stack(s) for s in names.SIDES] == ["enc", "dec"]
    assert words.site_full_words("dec.1.cross") == "decoder layer 2 cross-attention"
    assert words.short_words("masked self-attention · mask") == "masked self-attn · mask"
    assert words.sublayer_kind_words("ffn", short=True) == "FFN"
    assert words.sublayer_kind_words("ffn") == "feed-forward network"


def test_the_parsers_the_panels_used_to_spell_by_hand():
    from attnlab.engine import names

    assert names.layer_position("dec.1.cross.weights") == ("dec", 1) and names.layer_position("src.input") is None
    assert names.side_of("tgt.tokens") == "tgt" and names.side_of("enc.0.out") is None
    assert names.step_of("enc.0.self.weights") == "weights"
    assert names.site_kind_parts("dec.cross") == ("dec", "cross")
    assert names.first_site("enc") == "enc.0.self" and names.is_site(names.first_site("dec", "cross"))
