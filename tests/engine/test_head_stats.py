"""Head roles (engine/head_stats.py) against TransformerLens's own `head_detector.detect_head`, run through a
TransformerBridge on the same tiny random GPT-2 (transformers, built from a config object) whose converted weights
attnlab runs; and the other statistics against their definitions written in plain torch."""

from __future__ import annotations

import pytest
import torch

from attnlab.checkpoints.hf import convert
from attnlab.engine import head_stats
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.trace import Recorder
from tests.support.hf_tiny import gpt2
from tests.support.recorded import finished

MUL_TOL = 1e-6  # TransformerLens's "mul" score: measured ≤ 6e-8 (a ratio of sums of the same weights)
ABS_TOL = 5e-4 + 1e-5  # TransformerLens rounds its "abs" score to 3 decimals


def attnlab_trace(config, state, ids: list[int]):
    module = Transformer(config)
    module.load_state_dict(state)
    module.eval()
    rec = Recorder(True)
    rec("tgt.ids", torch.tensor([ids]))
    with torch.inference_mode():
        module(None, torch.tensor([ids]), rec=rec)
    return finished(rec, config, RunOptions())


def word(i: int) -> str:
    """Token i's word in the bridge's tokenizer: letters only ("xab" for 1), so no pre-tokenizer splits it."""
    return "x" + chr(97 + i // 26) + chr(97 + i % 26)


@pytest.fixture(scope="module")
def bridged(tmp_path_factory):
    """(TransformerBridge over the HF GPT-2, attnlab's config and state of the same weights, token words)."""
    tl = pytest.importorskip("transformer_lens.model_bridge")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    model, hf_config = gpt2()
    config, state, _notes = convert(hf_config, dict(model.state_dict()))  # before the bridge wraps its modules
    words = {word(i): i for i in range(hf_config["vocab_size"])}
    raw = Tokenizer(models.WordLevel(words, unk_token=word(1)))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder = tmp_path_factory.mktemp("tok")
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token=word(0), eos_token=word(0), unk_token=word(1)
    ).save_pretrained(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")  # nothing is downloaded: the model and the tokenizer are local
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        bridge = tl.TransformerBridge.boot_transformers("gpt2", hf_model=model, tokenizer=tok)
    return bridge, config, state


SEQUENCES = {
    "repeated": head_stats.probe_ids(99, 9, seed=3, avoid=frozenset({0})),
    "sentence": [5, 17, 3, 88, 42, 7, 9, 61, 5, 17],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
@pytest.mark.parametrize("measure", ["mul", "abs"])
@pytest.mark.parametrize("exclude_bos,exclude_current", [(False, False), (True, False), (True, True)])
def test_scores_equal_transformer_lens(bridged, name, measure, exclude_bos, exclude_current):
    from transformer_lens.head_detector import detect_head

    bridge, config, state = bridged
    text = " ".join(word(i) for i in SEQUENCES[name])
    ids = bridge.to_tokens(text)[0].tolist()  # TransformerLens puts its BOS first
    assert ids[1:] == SEQUENCES[name]
    trace = attnlab_trace(config, state, ids)
    ours = head_stats.head_stats(
        trace, trace, exclude_bos=exclude_bos, exclude_current_token=exclude_current, measure=measure
    )
    tol = MUL_TOL if measure == "mul" else ABS_TOL
    for stat, head_name in (("previous", "previous_token_head"), ("induction", "induction_head")):
        theirs = detect_head(
            bridge,
            text,
            head_name,
            exclude_bos=exclude_bos,
            exclude_current_token=exclude_current,
            error_measure=measure,
        )  # [L, H]
        err = float((ours.values[stat] - theirs).abs().max())
        assert err <= tol, f"{stat} ({measure}) differs from TransformerLens by {err:.2e}"


def test_patterns_equal_transformer_lens():
    hd = pytest.importorskip("transformer_lens.head_detector")
    ids = torch.tensor([[0, 4, 5, 6, 4, 5, 6, 4]])
    assert torch.equal(head_stats.previous_token_pattern(8), hd.get_previous_token_head_detection_pattern(ids))
    assert torch.equal(head_stats.induction_pattern(ids[0]), hd.get_induction_head_detection_pattern(ids))


def test_entropy_sink_and_distance_follow_their_definitions():
    torch.manual_seed(0)
    w = torch.tril(torch.rand(3, 6, 6)) + 0.0
    w = w / w.sum(-1, keepdim=True)  # [H, T, T], rows summing to 1
    for h in range(3):
        rows = [-sum(float(p) * float(torch.log(p)) for p in w[h, i] if p > 0) for i in range(6)]
        assert abs(float(head_stats.entropy(w)[h]) - sum(rows) / 6) < 1e-5
        assert abs(float(head_stats.sink_mass(w)[h]) - float(w[h, :, 0].mean())) < 1e-6
        dist = sum(float(w[h, i, j]) * abs(i - j) for i in range(6) for j in range(6)) / 6
        assert abs(float(head_stats.mean_distance(w)[h]) - dist) < 1e-5
    one_hot = torch.eye(6)[None]  # each query looks at itself only
    assert float(head_stats.entropy(one_hot)) == 0.0 and float(head_stats.mean_distance(one_hot)) == 0.0


def test_probe_ids_repeat_and_avoid_specials():
    ids = head_stats.probe_ids(10, 20, seed=1, avoid=frozenset({0, 1, 2}))
    assert ids[:20] == ids[20:] and not {0, 1, 2} & set(ids)
    with pytest.raises(ValueError, match="no ordinary token"):
        head_stats.probe_ids(2, 4, avoid=frozenset({0, 1}))
