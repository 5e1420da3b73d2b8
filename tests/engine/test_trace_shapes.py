"""The Trace holds every step under the documented names, with the documented shapes."""

import pytest
import torch

from attnlab.engine.options import OptionsError, RunOptions


def test_encoder_decoder_names_and_shapes(tiny_model):
    t = tiny_model().trace("the black cat sees the dog", "le chat noir")
    S, T, H, dk, d = 7, 4, 4, 8, 32  # 6 words + </s>; <s> + 3 words
    assert t["src.tokens"][-1] == "</s>" and t["tgt.tokens"][0] == "<s>"
    assert t["src.ids"].shape == (S,) and t["src.embed"].shape == (S, d) and t["src.pos"].shape == (S, d)
    for site, tq, tk in [("enc.1.self", S, S), ("dec.0.self", T, T), ("dec.1.cross", T, S)]:
        assert t[f"{site}.q"].shape == (H, tq, dk)
        assert t[f"{site}.k"].shape == (H, tk, dk) and t[f"{site}.v"].shape == (H, tk, dk)
        for step in ("scores", "scaled", "masked", "weights"):
            assert t[f"{site}.{step}"].shape == (H, tq, tk)
        assert t[f"{site}.mask"].shape == (tq, tk)
        assert t[f"{site}.context"].shape == (H, tq, dk) and t[f"{site}.out"].shape == (tq, d)
        assert torch.allclose(t[f"{site}.weights"].sum(-1), torch.ones(H, tq), atol=1e-5)
    assert t["dec.1.norm3.out"].shape == (T, d) and t["enc.0.ffn.hidden"].shape == (S, 64)
    assert t["logits"].shape == (T, 4 + 14) and t["probs"].shape == (T, 18)  # 4 specials + 14 words (conftest)
    assert all(v.dtype == torch.float32 for k, v in t.items() if isinstance(v, torch.Tensor) and ".ids" not in k)


def test_decoder_mask_is_causal_and_switchable(tiny_model):
    m = tiny_model()
    on = m.trace("the cat", "le chat noir voit")
    upper = torch.ones(5, 5, dtype=torch.bool).triu(1)
    assert torch.all(on["dec.0.self.weights"][:, upper] == 0)
    off = m.trace("the cat", "le chat noir voit", RunOptions().with_causal("dec.self", False))
    assert torch.all(off["dec.0.self.weights"][:, upper] > 0)


def test_head_resplit_reads_same_weights_as_more_heads(tiny_model):
    m = tiny_model()
    t8 = m.trace("the cat", "le", RunOptions(n_heads=8))
    t4 = m.trace("the cat", "le")
    assert t8["enc.0.self.q"].shape == (8, 3, 4)
    # Q itself is the same projection, only split differently
    assert torch.allclose(
        t8["enc.0.self.q"].transpose(0, 1).reshape(3, 32), t4["enc.0.self.q"].transpose(0, 1).reshape(3, 32), atol=1e-6
    )
    with pytest.raises(OptionsError, match="do not divide"):
        m.trace("the cat", "le", RunOptions(n_heads=5))


@pytest.mark.parametrize("arch", ["decoder-only", "encoder-only"])
def test_other_architectures(arch, tiny_model):
    t = tiny_model(arch).trace("the black cat")
    prefix = "dec" if arch == "decoder-only" else "enc"
    assert f"{prefix}.1.self.weights" in t and "dec.0.cross.weights" not in t
    assert t["probs"].shape[0] == (4 if arch == "decoder-only" else 5)


def test_fast_path_equals_recorded_path(tiny_model):
    m = tiny_model()
    opts = RunOptions(n_heads=2, pad_to=12)
    slow = m.trace("the black cat sees", "le chat", opts)
    fast = m.trace("the black cat sees", "le chat", opts.replace(record=False))
    assert torch.allclose(slow["logits"], fast["logits"], atol=1e-5)
    assert "enc.0.self.q" not in fast


def test_overlong_input_is_truncated_with_notice_and_empty_input_runs(tiny_model):
    m = tiny_model()
    t = m.trace("cat " * 5000, "")
    assert len(t["src.tokens"]) == 32 and any("dropped" in n for n in t.notices)
    empty = m.trace("", "")
    assert empty["src.tokens"] == ["</s>"] and torch.isfinite(empty["probs"]).all()


def test_encoder_only_truncation_keeps_the_front_and_says_how_much_was_dropped(tiny_model):
    model = tiny_model("encoder-only", d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, max_len=5)
    t = model.trace("the black cat sees the dog")
    assert t["src.tokens"] == ["<s>", "the", "black", "cat", "</s>"]
    assert any("the last 3 were dropped" in n for n in t.notices)


def test_config_with_wrong_types_reports_instead_of_crashing():
    from attnlab.engine.config import ModelConfig as MC

    problems = MC.from_dict({"d_model": "16", "n_heads": 4}).problems()
    assert problems == ["d_model has the wrong type (str: '16')"]


def test_decoder_only_generate_continues_the_prompt_given_as_src(tiny_model):
    m = tiny_model("decoder-only")
    first = next(m.generate("the black cat", max_new_tokens=3))
    assert first["tgt.tokens"] == ["<s>", "the", "black", "cat"]
    same = next(m.generate(prefix="the black cat", max_new_tokens=3))
    assert torch.equal(first["probs"], same["probs"])


def test_each_architecture_maps_source_and_target_onto_its_stacks(tiny_model):
    decoder_only, encoder_only, both = tiny_model("decoder-only"), tiny_model("encoder-only"), tiny_model()
    assert decoder_only.prompt_sides("a cat", "") == (None, "a cat")  # the prompt typed as the source
    assert decoder_only.prompt_sides("a cat", [5, 6]) == (None, [5, 6])  # generated ids win
    assert encoder_only.prompt_sides("a cat", "le chat") == ("a cat", None)
    assert both.prompt_sides("a cat", "le chat") == ("a cat", "le chat")
    assert decoder_only.trace("the cat", "")["tgt.tokens"] == ["<s>", "the", "cat"]
