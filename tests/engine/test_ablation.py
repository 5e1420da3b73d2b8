"""Head ablation (RunOptions.ablate): zeroing a head, or replacing it by its mean over positions, changes
exactly that head's slice of the concat, and what follows it; the recorded entries equal a hand computation
from the un-ablated run's tensors and the model's own W_O."""

import pytest
import torch

from attnlab.engine.options import OptionsError, RunOptions, parse_ablation

SRC, TGT = "the black cat sees the small dog", "le chat noir"
SITE, HEAD = "enc.0.self", 2


@pytest.fixture(scope="module")
def model(tiny_model):
    return tiny_model("encoder-decoder", seed=5)


def run(model, **changes):
    return model.trace(SRC, TGT, RunOptions(**changes))


def head_slice(matrix, head, n_heads):
    dk = matrix.shape[-1] // n_heads
    return matrix[..., head * dk : (head + 1) * dk]


@pytest.mark.parametrize("site", ["enc.0.self", "dec.1.self", "dec.0.cross"])
def test_zeroing_a_head_zeroes_its_concat_slice_and_keeps_the_others(model, site):
    before = run(model)
    after = run(model, ablate=((site, HEAD, "zero"),))
    H = after.n_heads
    concat, plain = after[f"{site}.concat"], before[f"{site}.concat"]  # [T, d]
    assert torch.equal(head_slice(concat, HEAD, H), torch.zeros_like(head_slice(concat, HEAD, H)))
    for h in set(range(H)) - {HEAD}:
        torch.testing.assert_close(head_slice(concat, h, H), head_slice(plain, h, H))
    torch.testing.assert_close(after[f"{site}.context"][HEAD], torch.zeros_like(plain[:, :8]))
    # the attention pattern itself is untouched: only what the head passes on is replaced
    torch.testing.assert_close(after[f"{site}.weights"], before[f"{site}.weights"])


def test_the_output_projection_sees_the_ablated_concat(model):
    after = run(model, ablate=((SITE, HEAD, "zero"),))
    w_o = dict(model.module.named_modules())["encoder.0.self_attn.w_o"]
    expected = torch.nn.functional.linear(after[f"{SITE}.concat"], w_o.weight.detach(), w_o.bias.detach())
    torch.testing.assert_close(after[f"{SITE}.out"], expected)


def test_mean_ablation_gives_every_position_the_heads_mean_context(model):
    before = run(model)
    after = run(model, ablate=((SITE, HEAD, "mean"),))
    plain = before[f"{SITE}.context"][HEAD]  # [T, dk]
    ablated = after[f"{SITE}.context"]  # [H, T, dk]
    torch.testing.assert_close(ablated[HEAD], plain.mean(dim=0, keepdim=True).expand_as(plain))
    others = [h for h in range(after.n_heads) if h != HEAD]
    torch.testing.assert_close(ablated[others], before[f"{SITE}.context"][others])


def test_ablation_changes_the_logits_and_the_fast_path_agrees(model):
    options = RunOptions(ablate=((SITE, HEAD, "zero"), ("dec.1.cross", 0, "mean")))
    before, after = run(model), model.trace(SRC, TGT, options)
    assert not torch.allclose(before["logits"], after["logits"])
    fast = model.trace(SRC, TGT, options.replace(record=False))
    torch.testing.assert_close(fast["logits"], after["logits"], rtol=1e-4, atol=1e-5)


def test_later_layers_see_the_ablation(model):
    before, after = run(model), run(model, ablate=((SITE, HEAD, "zero"),))
    assert not torch.allclose(before["enc.1.self.q"], after["enc.1.self.q"])


def test_ablating_with_another_head_count(model):
    after = run(model, n_heads=8, ablate=((SITE, 7, "zero"),))
    assert torch.equal(head_slice(after[f"{SITE}.concat"], 7, 8), torch.zeros(after[f"{SITE}.concat"].shape[0], 4))


@pytest.mark.parametrize(
    ("ablate", "words"),
    [
        ((("enc.5.self", 0, "zero"),), "has 2 layers"),
        ((("enc.0.cross", 0, "zero"),), "no such attention"),
        ((("enc.self", 0, "zero"),), "name one site"),
        ((("enc.0.self", 4, "zero"),), "this run has 4 heads (0 to 3)"),
        ((("enc.0.self", -1, "zero"),), "this run has 4 heads"),
        ((("enc.0.self", 0, "half"),), "the modes are zero, mean"),
        ((("nonsense", 0, "zero"),), "not an attention site"),
        (("enc.0.self",), "triples of (site, head, mode)"),
    ],
)
def test_invalid_ablations_are_refused_with_a_clear_message(model, ablate, words):
    with pytest.raises(OptionsError) as caught:
        model.trace(SRC, TGT, RunOptions(ablate=ablate))
    assert words in str(caught.value)


def test_a_head_valid_for_eight_heads_is_refused_for_four(model):
    problems = RunOptions(ablate=((SITE, 6, "zero"),)).problems(model.config)
    assert problems and "4 heads" in problems[0]
    assert RunOptions(n_heads=8, ablate=((SITE, 6, "zero"),)).problems(model.config) == []


def test_with_ablation_sets_replaces_and_clears():
    o = RunOptions().with_ablation(SITE, 1, "zero").with_ablation(SITE, 1, "mean")
    assert o.ablate == ((SITE, 1, "mean"),) and o.ablation_of(SITE, 1) == "mean"
    assert o.ablations(SITE) == {1: "mean"} and o.ablation_of(SITE, 0) is None
    assert o.with_ablation(SITE, 1, None).ablate == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("enc.0.self:2:zero", ("enc.0.self", 2, "zero")),
        ("dec.1.cross:0:mean", ("dec.1.cross", 0, "mean")),
        ("enc.0.self:3", ("enc.0.self", 3, "zero")),
    ],
)
def test_parse_ablation(text, expected):
    assert parse_ablation(text) == expected


@pytest.mark.parametrize("text", ["enc.0.self", "enc.0.self:x:zero", "enc.0.self:1:half", "a:1:zero:more"])
def test_parse_ablation_refuses_other_forms(text):
    with pytest.raises(ValueError, match="ablation"):
        parse_ablation(text)
