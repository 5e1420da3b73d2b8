"""Greedy generation of imported BART-family encoder-decoders: a Hugging Face folder (tiny random model saved by
save_pretrained, with its tokenizer files) opened by attnlab gives, step by step, the same ids as transformers'
`generate(do_sample=False, num_beams=1)`: the decoder start, the forced first token (BART-large's <s>, mBART-50's
target language), every greedy token and the stop at </s>. The source ids are attnlab's, which
test_hf_bart_tokenizers.py shows equal AutoTokenizer's. forced_eos_token_id (which would force </s> at
max_length) is switched off on the transformers side: attnlab stops at </s> or its max_new_tokens."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

transformers = pytest.importorskip("transformers")
import attnlab  # noqa: E402
from attnlab.checkpoints.hf_folder import load_hf_folder  # noqa: E402
from attnlab.cli import main  # noqa: E402
from attnlab.engine import names  # noqa: E402
from tests.support import bart_tokenizers as B  # noqa: E402
from tests.support import hf_tiny_bart as H  # noqa: E402

TEXT = "the quick brown fox jumps over the lazy dog"
STEPS = 12


def saved_model(family: str, tmp_path, mbart_class: str = "MBart50Tokenizer", **generation):
    """(folder, transformers model): the family's tiny model, its vocabulary the size of the folder's tokenizer,
    saved by save_pretrained next to the tokenizer files (generation settings written to generation_config.json)."""
    tokens = tmp_path / "tokenizer"
    tokens.mkdir()
    if family == "bart":
        B.bart_vocab(tokens)
    elif family == "mbart":
        B.mbart_json(tokens, mbart_class, src_lang="en_XX")
    else:
        B.pegasus_json(tokens)
    vocab = B.vocab_size(tokens)
    folder = tmp_path / family
    shutil.copytree(tokens, folder)
    (folder / "config.json").unlink(missing_ok=True)
    build = {"bart": H.bart, "mbart": H.mbart, "pegasus": H.pegasus}[family]
    model, _config = build(vocab_size=vocab)
    for key, value in {"forced_eos_token_id": None, **generation}.items():
        setattr(model.generation_config, key, value)
    model.save_pretrained(str(folder))
    return folder, model


def greedy_pair(folder, model, steps: int = STEPS) -> tuple[list[int], list[int]]:
    """(attnlab's decoder ids with the token that ended the run, transformers' generate output)."""
    live = load_hf_folder(folder)
    traces = list(live.generate(TEXT, max_new_tokens=steps))
    last = traces[-1]
    ours = [int(i) for i in last[names.side_entry("tgt", "ids")]] + [last.info["next_id"]]
    src = torch.tensor([[int(i) for i in traces[0][names.side_entry("src", "ids")]]])  # [1, S]
    with torch.no_grad():
        theirs = model.generate(src, do_sample=False, num_beams=1, max_new_tokens=len(ours) - 1)
    return ours, theirs[0].tolist()


@pytest.mark.parametrize(
    ("family", "generation"),
    [
        ("bart", {"forced_bos_token_id": 0}),  # as facebook/bart-large-cnn: </s> <s> …
        ("bart", {}),
        ("pegasus", {}),  # starts from <pad>
    ],
)
def test_greedy_ids_equal_transformers_generate(family, generation, tmp_path):
    folder, model = saved_model(family, tmp_path, **generation)
    ours, theirs = greedy_pair(folder, model)
    assert ours == theirs
    start = model.generation_config.decoder_start_token_id
    assert ours[0] == start and len(ours) > 3
    if generation:
        assert ours[1] == generation["forced_bos_token_id"]


def test_mbart50_starts_with_the_target_language(tmp_path):
    """mBART-50: the decoder starts from </s>, then the target language code generate() forces."""
    tokens = tmp_path / "probe"
    tokens.mkdir()
    ro = transformers.AutoTokenizer.from_pretrained(str(B.mbart_json(tokens))).convert_tokens_to_ids("ro_RO")
    folder, model = saved_model("mbart", tmp_path, forced_bos_token_id=ro, decoder_start_token_id=2)
    ours, theirs = greedy_pair(folder, model)
    assert ours == theirs and ours[:2] == [2, ro]
    live = load_hf_folder(folder)
    trace = live.trace(TEXT, "")
    assert trace[names.side_entry("src", "tokens")][0] == "en_XX"  # MBart50Tokenizer: [src_lang] … </s>
    assert trace[names.side_entry("tgt", "tokens")][:2] == ["</s>", "ro_RO"]


def test_mbart_cc25_starts_from_the_target_language(tmp_path):
    """mBART (cc25, en-ro): the source ends … </s> en_XX; the decoder starts from the target language code,
    config's decoder_start_token_id, with nothing forced after it."""
    tokens = tmp_path / "probe"
    tokens.mkdir()
    ro = transformers.AutoTokenizer.from_pretrained(str(B.mbart_json(tokens))).convert_tokens_to_ids("ro_RO")
    folder, model = saved_model("mbart", tmp_path, "MBartTokenizer", decoder_start_token_id=ro)
    ours, theirs = greedy_pair(folder, model)
    assert ours == theirs and ours[0] == ro and len(ours) > 3
    trace = load_hf_folder(folder).trace(TEXT, "")
    assert trace[names.side_entry("src", "tokens")][-2:] == ["</s>", "en_XX"]
    assert trace[names.side_entry("tgt", "tokens")] == ["ro_RO"]


def test_a_stop_at_eos_is_the_same_stop(tmp_path):
    """</s>'s logit bias raised so that it wins at some step (the median of its gaps to the best token): both
    stop at the same </s>, attnlab with its run marked finished."""
    folder, model = saved_model("bart", tmp_path)
    eos = model.generation_config.eos_token_id
    live = load_hf_folder(folder)
    src = torch.tensor([[int(i) for i in live.trace(TEXT, "")[names.side_entry("src", "ids")]]])  # [1, S]
    with torch.no_grad():
        run = model.generate(
            src, do_sample=False, num_beams=1, max_new_tokens=STEPS, output_scores=True, return_dict_in_generate=True
        )
        gaps = sorted(float(s[0].max() - s[0, eos]) for s in run.scores)
        model.final_logits_bias[0, eos] += gaps[len(gaps) // 2] + 1e-3
    model.save_pretrained(str(folder))
    ours, theirs = greedy_pair(folder, model)
    assert ours == theirs and ours[-1] == eos and eos not in ours[1:-1]
    assert len(ours) <= STEPS  # it stopped before running out of steps
    assert list(load_hf_folder(folder).generate(TEXT, max_new_tokens=STEPS))[-1].info["finished"]


def test_translate_command_and_api_print_what_generate_wrote(tmp_path, capsys):
    folder, model = saved_model("bart", tmp_path, forced_bos_token_id=0)
    _ours, theirs = greedy_pair(folder, model, steps=8)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    expected = auto.decode(theirs[: 2 + 7], skip_special_tokens=True)  # </s> <s> and 7 new tokens
    assert main(["translate", "--checkpoint", str(folder), "--max-new-tokens", "7", TEXT]) == 0
    assert capsys.readouterr().out.strip() == expected.strip()
    assert attnlab.load(folder).translate(TEXT, max_new_tokens=7).strip() == expected.strip()
    assert json.loads((folder / "generation_config.json").read_text())["forced_bos_token_id"] == 0


def test_the_apps_generate_button_appends_transformers_tokens(qtbot, tmp_path):
    """Session.generate_next (the app's "Generate next token"), pressed four times on an imported BART: the
    decoder input grows by transformers' greedy tokens, after </s> <s>, and every step shows cross-attention."""
    from attnlab.session import Session

    folder, model = saved_model("bart", tmp_path, forced_bos_token_id=0)
    _ours, theirs = greedy_pair(folder, model, steps=6)
    assert model.generation_config.eos_token_id not in theirs[1:6]  # four tokens to append (seeded weights)
    session = Session()
    try:
        with qtbot.waitSignal(session.traceReady, timeout=20000):
            session.set_model(load_hf_folder(folder), TEXT, "")
        for n in range(3, 7):
            with qtbot.waitSignal(session.traceReady, timeout=20000):
                session.generate_next()
            trace = session.trace
            assert [int(i) for i in trace[names.side_entry("tgt", "ids")]] == theirs[:n]
            assert trace["dec.0.cross.weights"].shape[-2:] == (n, len(trace[names.side_entry("src", "ids")]))
    finally:
        session.shutdown()
