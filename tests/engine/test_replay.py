"""A lean run (engine/replay.py) keeps each layer's output only and recomputes a layer when one of its entries is
read. Every entry must equal the whole trace's to the last bit, for every imported family and the toggles that
change how a layer runs; the lean trace must hold a fraction of the bytes; a replay of a changed model must
refuse in one line instead of giving other numbers."""

from __future__ import annotations

import pytest
import torch

from attnlab.checkpoints.hf import convert
from attnlab.engine import replay
from attnlab.engine.budget import estimate_trace_bytes
from attnlab.engine.hf_tokenizer import NumberTokenizer
from attnlab.engine.live import LiveModel
from attnlab.engine.model import Transformer
from attnlab.engine.options import RunOptions
from attnlab.engine.replay import ReplayError
from tests.support.family_cases import FAMILY_CASES
from tests.support.hf_tiny import DEC_IDS, IDS
from tests.support.tiny import assert_same_trace, build_tiny_model

SRC, TGT = "the black cat sees the dog", "le chat noir voit"


def family_model(name: str) -> LiveModel:
    case, _mechanisms = FAMILY_CASES[name]
    model, hf_config = case.build()
    config, state, _notes = convert(hf_config, model.state_dict())
    module = Transformer(config)
    module.load_state_dict(state)
    numbers = NumberTokenizer(max(config.src_vocab_size, config.tgt_vocab_size))
    return LiveModel(module, numbers, numbers, name=name)


def lean(model: LiveModel, attention: bool = False) -> LiveModel:
    """The same module, run lean whatever the trace's size, keeping each layer's output only (what a GPU run, or
    one short of memory, keeps); `attention`: each site's Q, K, V and mask too (what a CPU run keeps)."""
    twin = LiveModel(model.module, model.src_tokenizer, model.tgt_tokenizer, name=model.name)
    twin.lean_above = 0
    keep = replay.ATTENTION if attention else replay.OUTPUTS
    twin._keep = lambda device, options, sides: keep  # type: ignore[method-assign]
    return twin


def replays_of(trace) -> set[int]:
    return {id(e.params[0]) for e in trace.entries.values() if getattr(e, "rule", None) == replay.RULE}


@pytest.mark.parametrize("name", list(FAMILY_CASES))
def test_every_family_reads_the_same_entries_from_a_lean_run(name):
    whole_model = family_model(name)
    config = whole_model.config
    src = list(IDS) if config.has_encoder else None
    tgt = list(DEC_IDS if config.has_encoder else IDS) if config.has_decoder else None
    if not config.has_encoder:
        src, tgt = tgt, None
    whole = whole_model.trace(src, tgt)
    thin = lean(whole_model).trace(src, tgt)
    assert not replays_of(whole) and len(replays_of(thin)) == 1
    assert thin.stored_bytes() < whole.stored_bytes()
    assert_same_trace(whole, thin)
    sites = lean(whole_model, attention=True).trace(src, tgt)
    assert thin.stored_bytes() < sites.stored_bytes() < whole.stored_bytes()
    assert_same_trace(whole, sites)


@pytest.mark.parametrize("name", list(FAMILY_CASES))
def test_the_memory_budget_bounds_every_family_whole_and_lean(name):
    """engine/budget.py's estimate, which decides before a run whether it fits (and whether it runs lean), is
    never below what the trace stores, and not far above, at two lengths (what grows with the input)."""
    model = family_model(name)
    config = model.config
    for repeat in (1, 2):
        src = list(IDS) * repeat if config.has_encoder else None
        tgt = list(DEC_IDS if config.has_encoder else IDS) * repeat if config.has_decoder else None
        if not config.has_encoder:
            src, tgt = tgt, None
        for runner, keep in (
            (model, replay.WHOLE),
            (lean(model), replay.OUTPUTS),
            (lean(model, True), replay.ATTENTION),
        ):
            trace = runner.trace(src, tgt)
            S, T = (len(trace[f"{side}.tokens"]) if f"{side}.tokens" in trace else 0 for side in ("src", "tgt"))
            estimate = estimate_trace_bytes(config, RunOptions(), S, T, 4, keep)
            assert trace.stored_bytes() <= estimate <= 1.5 * trace.stored_bytes(), (repeat, keep)


@pytest.mark.parametrize(
    "options",
    [
        RunOptions(norm="pre"),
        RunOptions(n_heads=8),
        RunOptions(scale=False, positional=False),
        RunOptions(residual=False, projections=False),
        RunOptions().with_causal("dec.self", False),
        RunOptions().toggled_mask_cell("dec.1.cross", 1, 3),
        RunOptions(ablate=(("dec.0.self", 1, "zero"),)),
        RunOptions(pad_to=12),
    ],
    ids=["pre-norm", "8 heads", "no scale no positions", "no residual", "causal off", "mask cell", "ablated", "padded"],
)
def test_toggles_read_the_same_from_a_lean_run(options):
    whole_model = build_tiny_model()
    whole = whole_model.trace(SRC, TGT, options)
    thin = lean(whole_model).trace(SRC, TGT, options)
    assert_same_trace(whole, thin)


def the_replay(trace) -> replay.LayerReplay:
    (layer_replay,) = {e.params[0] for e in trace.entries.values() if getattr(e, "rule", None) == replay.RULE}
    return layer_replay


def twin_of(model: LiveModel, lean_above: int) -> LiveModel:
    """The same module in another LiveModel (a model hands back its last run for the same input)."""
    twin = LiveModel(model.module, model.src_tokenizer, model.tgt_tokenizer, name=model.name)
    twin.lean_above = lean_above
    return twin


def small_model_512() -> tuple[LiveModel, list[int]]:
    """A small decoder-only model and 511 token ids (512 tokens with <s>)."""
    model = build_tiny_model(arch="decoder-only", max_len=512)
    return model, [4 + (7 * i) % (model.config.tgt_vocab_size - 4) for i in range(511)]


def test_a_lean_cpu_run_keeps_each_sites_q_k_v_and_mask_and_reads_a_head_without_its_layer():
    """On the CPU a lean run keeps what a head's map is derived from whenever it fits the memory (LiveModel._keep):
    at 512 tokens every head of every site reads without running a layer again, equal to the whole trace's to the
    last bit; an FFN entry still runs its layer."""
    model, ids = small_model_512()
    whole, thin = model.trace(tgt=ids), twin_of(model, 0).trace(tgt=ids)
    assert len(thin["tgt.tokens"]) == 512 and not replays_of(whole)
    assert thin.info["kept"] == replay.ATTENTION and thin.stored_bytes() < whole.stored_bytes()
    layer_replay = the_replay(thin)
    for site in thin.sites():
        for step in replay.SITE_INPUTS:
            assert isinstance(thin.entries[f"{site}.{step}"], torch.Tensor), (site, step)  # stored, not replayed
        for head in range(thin.n_heads):
            assert torch.equal(thin.read(f"{site}.weights", head), whole[f"{site}.weights"][head]), (site, head)
    assert layer_replay.replays == 0
    thin["dec.1.ffn.out"]
    assert layer_replay.replays == 1
    assert_same_trace(whole, thin)


def test_a_lean_cpu_run_short_of_memory_keeps_each_layers_output_only(monkeypatch):
    """When the run does not fit the memory with each site's Q, K, V and mask but fits without them, it keeps the
    layers' outputs only (and a head's map runs its layer again, to the same numbers); a GPU run never keeps them
    (a layer runs there in milliseconds)."""
    from attnlab.engine import live_placement, run_budget

    model, ids = small_model_512()
    model.lean_above = 0
    options = RunOptions()
    needs = {
        keep: run_budget.run_needs(model.config, options, 0, 512, 4, 0, keep).total
        for keep in (replay.OUTPUTS, replay.ATTENTION)
    }
    assert needs[replay.OUTPUTS] < needs[replay.ATTENTION]
    room = (needs[replay.OUTPUTS] + needs[replay.ATTENTION]) // 2
    monkeypatch.setattr(live_placement, "available_on", lambda _device: int(room / live_placement.HEADROOM))
    thin = model.trace(tgt=ids)
    assert thin.info["kept"] == replay.OUTPUTS
    assert not isinstance(thin.entries["dec.0.self.q"], torch.Tensor)
    monkeypatch.undo()
    whole = twin_of(model, 1 << 62).trace(tgt=ids)
    assert torch.equal(thin.read("dec.1.self.weights", 2), whole["dec.1.self.weights"][2])
    assert the_replay(thin).replays == 1
    sides = model._inputs(*model.prompt_sides(None, ids), options, [], {})
    assert model._keep(torch.device("cuda"), options, sides) == replay.OUTPUTS
    assert model._keep(torch.device("cpu"), options, sides) == replay.ATTENTION


def test_a_layer_runs_again_once_for_all_of_its_entries():
    thin = lean(build_tiny_model()).trace(SRC, TGT)
    (layer_replay,) = {e.params[0] for e in thin.entries.values() if getattr(e, "rule", None) == replay.RULE}
    names = [n for n in thin.names() if n.startswith("dec.1.")]
    thin.fetch(names)
    assert layer_replay.replays == 1
    thin["enc.0.ffn.out"], thin["enc.1.self.q"]  # two other layers: one run each
    assert layer_replay.replays == 3


def test_a_mask_toggle_after_a_lean_run_resumes_and_still_reads_the_same():
    model = lean(build_tiny_model())
    model.trace(SRC, TGT)
    after = RunOptions().toggled_mask_cell("dec.1.self", 2, 0)
    resumed = model.trace(SRC, TGT, after)
    assert resumed.info["resumed_from"] == "dec.1"
    assert_same_trace(build_tiny_model().trace(SRC, TGT, after), resumed)


def test_a_lean_trace_of_a_changed_model_refuses_in_one_line():
    model = lean(build_tiny_model())
    thin = model.trace(SRC, TGT)
    with torch.no_grad():
        next(model.module.parameters()).add_(1.0)  # the training-step slider writes weights in place
    with pytest.raises(ReplayError, match="changed since this run") as caught:
        thin["dec.0.self.q"]
    assert "\n" not in str(caught.value)
    assert thin["dec.0.out"].shape[0] == len(thin["tgt.tokens"])  # what the run stored still reads


def test_small_runs_stay_whole_and_long_ones_go_lean():
    model = build_tiny_model()
    assert not replays_of(model.trace(SRC, TGT))
    model.lean_above = 1 << 10  # bytes: this small run's whole trace is larger
    assert replays_of(model.trace(SRC, TGT + " ."))


# ---- in the app: a stage whose layer must be recomputed is computed on the worker, then shown --------------


@pytest.fixture
def session(qtbot):
    from attnlab.session import Session

    s = Session()
    yield s
    s.shutdown()


def test_the_session_recomputes_a_lean_layer_on_the_worker_before_showing_its_stage(qtbot, session):
    model = lean(build_tiny_model())
    with qtbot.waitSignal(session.traceReady, timeout=10000):
        session.set_model(model, SRC, "le chat")
    trace = session.trace
    key = next(s.key for s in session.stages if s.key.startswith("dec.1.") and s.kind == "ffn")
    shown = []
    session.stageChanged.connect(shown.append)
    session.set_stage(key)
    assert shown == [] and session.stage_key != key  # not yet: the worker runs layer dec.1 again
    qtbot.waitUntil(lambda: shown == [key], timeout=10000)
    stage = session.stage
    assert stage is not None and stage.key == key
    from attnlab.present.stages import slow_to_show, warm_entries

    assert slow_to_show(trace, stage) == [] and all(trace.on_host(n) for n in warm_entries(stage) if n in trace)


def test_a_whole_trace_shows_a_stage_at_once(qtbot, session):
    with qtbot.waitSignal(session.traceReady, timeout=10000):
        session.set_model(build_tiny_model(), SRC, "le chat")
    key = next(s.key for s in session.stages if s.key.startswith("dec.1.") and s.kind == "ffn")
    with qtbot.waitSignal(session.stageChanged, timeout=10):
        session.set_stage(key)
    assert session.stage_key == key
