"""The session: off-thread runs with latest-request-wins, failures that keep the previous state, one token per
Generate press, model loading that keeps the open model on failure, and the Qt-free helpers."""

import pytest
import torch

from attnlab.checkpoints import CheckpointError
from attnlab.engine.options import RunOptions
from attnlab.engine.tokenizer import EOS
from attnlab.present.stages import stages_for
from attnlab.present.texts import example_sentence, real_length
from attnlab.session import Session

WAIT = 10000


@pytest.fixture
def session(qtbot):
    s = Session()
    yield s
    s.shutdown()


def open_model(qtbot, session, model, src="the black cat sees the dog", tgt="le chat"):
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_model(model, src, tgt)
    return session.trace


def test_first_trace_holds_the_texts_and_stages(qtbot, session, generating_model):
    trace = open_model(qtbot, session, generating_model())
    assert trace["src.tokens"] == ["the", "black", "cat", "sees", "the", "dog", "</s>"]
    assert trace["tgt.tokens"] == ["<s>", "le", "chat"]
    assert [s.key for s in session.stages] == [s.key for s in stages_for(trace)]
    assert session.stage_key == session.stages[0].key and not session.busy


def test_latest_request_wins(qtbot, session, generating_model):
    model = generating_model()
    open_model(qtbot, session, model)
    calls = []
    original = model.trace
    model.trace = lambda *a, **k: calls.append(1) or original(*a, **k)
    seen = []
    session.traceReady.connect(seen.append)
    for i in range(20):  # 20 rapid changes: at most one run in flight, one waiting
        session.update_options(temperature=1.0 + 0.1 * (i + 1))
    qtbot.waitUntil(lambda: not session.busy, timeout=WAIT)
    qtbot.wait(50)
    assert len(seen) == 1 and len(calls) <= 2
    assert session.trace is seen[0]
    expected = original(session.src, session.tgt, RunOptions(temperature=3.0))
    assert torch.allclose(seen[0]["probs"], expected["probs"], atol=1e-6)


def test_typing_is_debounced_into_one_trace(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model())
    seen = []
    session.traceReady.connect(seen.append)
    text = ""
    for ch in "dog bites man":
        text += ch
        session.set_src(text)
    assert session.busy
    qtbot.waitUntil(lambda: len(seen) == 1 and not session.busy, timeout=WAIT)
    qtbot.wait(250)
    assert len(seen) == 1 and seen[0]["src.tokens"] == ["dog", "bites", "man", "</s>"]


def test_impossible_options_are_refused_and_state_stays(qtbot, session, generating_model):
    trace = open_model(qtbot, session, generating_model())
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        assert not session.update_options(n_heads=5)
    assert "do not divide" in failed.args[0]
    assert session.options.n_heads is None and session.trace is trace


def test_an_exception_in_a_run_becomes_failed_and_the_trace_stays(qtbot, session, generating_model):
    model = generating_model()
    trace = open_model(qtbot, session, model)

    def broken(*_a, **_k):
        raise RuntimeError("the GPU caught fire")

    model.trace = broken
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        session.update_options(scale=False)
    assert failed.args[0] == "RuntimeError: the GPU caught fire"
    assert session.trace is trace and session.model is model


def test_generate_adds_exactly_one_token_per_press(qtbot, session, generating_model):
    trace = open_model(qtbot, session, generating_model())
    rows = trace["dec.0.self.weights"].shape[1]
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.generate_next()
    t1 = session.trace
    assert len(t1["tgt.tokens"]) == len(trace["tgt.tokens"]) + 1
    assert t1["dec.0.self.weights"].shape[1:] == (rows + 1, rows + 1)
    assert t1["dec.1.cross.weights"].shape[1] == rows + 1
    predicted = model_next(session, trace)
    assert t1["tgt.tokens"][-1] == predicted
    for _ in range(3):  # three quick presses while runs are under way: three tokens, no more
        session.generate_next()
    qtbot.waitUntil(lambda: len(session.trace["tgt.tokens"]) == rows + 4 and not session.busy, timeout=WAIT)
    qtbot.wait(100)
    assert len(session.trace["tgt.tokens"]) == rows + 4


def model_next(session, trace):
    return session.model.next_token(trace)[1]


def test_generate_uses_the_last_real_position_when_padded(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model())
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.update_options(pad_to=10)
    padded = session.trace
    n = real_length(padded["tgt.tokens"])
    assert padded["tgt.tokens"][n:] == ["<pad>"] * (10 - n)
    expected = session.model.next_token(session.model.trace(session.src, session.tgt))[1]  # no padding
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.generate_next()
    assert real_length(session.trace["tgt.tokens"]) == n + 1
    assert session.trace["tgt.tokens"][n] == expected


def test_generation_stops_at_end_of_sentence(qtbot, session, generating_model):
    model = generating_model()
    with torch.no_grad():
        model.module.out_proj.bias[model.tgt_tokenizer.eos_id] = 1e4  # now </s> always wins
    trace = open_model(qtbot, session, model)
    with qtbot.waitSignal(session.notice, timeout=WAIT) as notice:
        session.generate_next()
    assert EOS in notice.args[0] and session.trace is trace and session.tgt == "le chat"


def test_decoder_only_generation_extends_the_prompt(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model("decoder-only"), src="the black cat", tgt=None)
    assert "src.tokens" not in session.trace and session.trace["tgt.tokens"][1:] == ["the", "black", "cat"]
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.generate_next()
    assert session.src.startswith("the black cat ") and len(session.trace["tgt.tokens"]) == 5


def test_stage_is_kept_across_retraces_even_with_positions_switched_off(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model())
    session.set_stage("enc.1.self.weights")
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.update_options(n_heads=8)
    assert session.stage_key == "enc.1.self.weights"
    session.set_stage("src.pos")
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.update_options(positional=False)
    assert "src.pos" not in session.trace and session.stage_key == "src.pos"  # its panel says it is off


def test_step_stage_clamps_at_both_ends(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model())
    session.step_stage(-1)
    assert session.stage_key == session.stages[0].key
    session.step_stage(10**9)
    assert session.stage_key == session.stages[-1].key
    session.step_stage(1)
    assert session.stage_key == session.stages[-1].key
    session.step_stage(-2)
    assert session.stage_key == session.stages[-3].key


def test_a_model_that_fails_to_load_leaves_the_open_one(qtbot, session, generating_model):
    model = generating_model()
    trace = open_model(qtbot, session, model)

    def bad():
        raise CheckpointError("broken.safetensors is not a safetensors file")

    with qtbot.waitSignal(session.modelFailed, timeout=WAIT) as failed:
        session.load_async(bad, path="broken.safetensors")
    assert "not a safetensors file" in failed.args[0]
    assert session.model is model and session.trace is trace


def test_loading_a_model_off_thread_opens_it_with_a_greedy_prefix(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model())
    other = generating_model(seed=3)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: other, src="the black cat", prefix=True)
    assert session.model is other and session.trace["src.tokens"][:3] == ["the", "black", "cat"]
    greedy = other.translate("the black cat", max_new_tokens=13).split()
    assert session.tgt.split() == greedy[: max(1, min(len(greedy) - 1, 12))]
    assert session.options == RunOptions()


def test_the_remembered_sentence_is_reused_only_for_the_model_it_was_typed_for(qtbot, session, generating_model):
    open_model(qtbot, session, generating_model())
    other = generating_model(seed=3)
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: other, remembered=(other.name, "the dog sees the cat"))
    assert session.src == "the dog sees the cat"
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: other, remembered=("some other model", "le chat dort"))
    assert session.src == example_sentence(other)


def test_the_example_sentence_is_one_the_model_can_read(generating_model):
    import attnlab
    from attnlab.checkpoints.bundled import bundled_path

    if not bundled_path("language").exists():
        pytest.skip("the bundled language model is not in resources/")
    french_only = attnlab.load_bundled("language")
    assert example_sentence(french_only) == "le chat noir"  # a language model's prompt: its first words
    assert example_sentence(generating_model()) == "the black cat sees the small dog"


def test_a_toggle_says_which_fields_changed_and_is_validated_once(qtbot, session, generating_model, monkeypatch):
    open_model(qtbot, session, generating_model())
    checked = []
    problems = RunOptions.problems
    monkeypatch.setattr(RunOptions, "problems", lambda self, config: checked.append(self) or problems(self, config))
    seen = []
    session.optionsChanged.connect(lambda options, changed: seen.append(changed))
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.update_options(scale=False, temperature=2.0)
    assert seen == [frozenset({"scale", "temperature"})]
    assert len(checked) == 1 and session.trace.options.scale is False  # checked by the session, not again by the run
    with qtbot.waitSignal(session.failed, timeout=WAIT):
        session.update_options(n_heads=5)
    assert seen[-1] == frozenset({"n_heads"}) and session.options.n_heads is None  # the heads control snaps back


def test_a_decoder_only_model_reads_its_prompt_from_the_source_box_only(qtbot, session, generating_model):
    trace = open_model(qtbot, session, generating_model("decoder-only"), src="the black cat", tgt="le chat")
    assert session.tgt == "" and trace["tgt.tokens"] == ["<s>", "the", "black", "cat"] and "src.tokens" not in trace
    session.set_tgt("le chien", debounce=False)  # no decoder-input box: nothing to change
    assert session.tgt == "" and not session.busy
