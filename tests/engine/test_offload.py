"""Models bigger than their memory (engine/offload.py): a placement over the run's device, the host and the disk,
dispatched through accelerate's hooks, gives the very numbers of the model held whole — every trace entry."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("accelerate")

from attnlab.engine.build import build_transformer
from attnlab.engine.config import ModelConfig
from attnlab.engine.offload import (
    Placement,
    dispatch,
    layer_names,
    module_bytes,
    plan_placement,
    streamed_layers,
)
from attnlab.engine.trace import Recorder

LLAMA_LIKE = ModelConfig(
    arch="decoder-only",
    tgt_vocab_size=97,
    d_model=32,
    n_heads=4,
    n_kv_heads=2,
    d_ff=64,
    n_decoder_layers=4,
    positional="rotary",
    rotary_layout="half",
    norm="rmsnorm",
    ffn="gated",
    norm_first=True,
    final_norm=True,
    bias=False,
    tie_output=False,
    max_len=32,
)
TRANSLATOR = ModelConfig(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=3, max_len=32)


def recorded(module, config: ModelConfig) -> dict[str, torch.Tensor]:
    rec = Recorder(True, eager=True)
    src = torch.tensor([[3, 9, 4, 7, 2]]) if config.has_encoder else None
    tgt = torch.tensor([[1, 5, 8, 6]]) if config.has_decoder else None
    with torch.inference_mode():
        module(src, tgt, rec=rec)
    return {name: value for name, value in rec.entries().items() if isinstance(value, torch.Tensor)}


def layer_size(module) -> int:
    return module_bytes(module.get_submodule(layer_names(module)[0]))


@pytest.mark.parametrize("config", [LLAMA_LIKE, TRANSLATOR], ids=["decoder-only", "encoder-decoder"])
def test_layers_read_from_disk_give_every_entry_of_the_whole_model(config, tmp_path):
    whole = build_transformer(config, seed=3).eval()
    reference = recorded(whole, config)
    state = {k: v.clone() for k, v in whole.state_dict(keep_vars=False).items()}
    module = build_transformer(config, seed=99).eval()  # other weights: every number must come from `state`
    resident = module_bytes(module) - sum(module_bytes(module.get_submodule(n)) for n in layer_names(module))
    placement = plan_placement(module, [("cpu", resident + 2 * layer_size(module)), ("disk", None)])
    n_layers = len(layer_names(module))
    assert [placement.where(n) for n in layer_names(module)] == ["cpu"] * 2 + ["disk"] * (n_layers - 2)
    loaded: list[str] = []

    def load(name: str) -> torch.Tensor:
        loaded.append(name)
        return state[name]

    dispatched = dispatch(module, placement, load, tmp_path / "offload")
    assert sorted(loaded) == sorted(n for n in state if n != "sinusoid")
    on_disk = dispatched.get_submodule(layer_names(module)[-1])
    assert all(p.device.type == "meta" for p in on_disk.parameters())  # nothing of it is held in memory
    assert (tmp_path / "offload" / "index.json").is_file()
    got = recorded(dispatched, config)
    assert got.keys() == reference.keys()
    for name, value in reference.items():
        assert torch.equal(got[name], value), name
    assert [i for i, _ in streamed_layers(dispatched, placement)] == list(range(3, n_layers + 1))


def test_the_summary_says_where_each_run_of_layers_lives():
    placement = Placement(
        {"tgt_embed": "cuda:0", **{f"decoder.{i}": w for i, w in enumerate(["cuda:0"] * 3 + ["cpu"] * 2 + ["disk"])}},
        "cuda:0",
        [f"decoder.{i}" for i in range(6)],
    )
    assert placement.summary() == (
        "layers 1–3 on cuda:0, layers 4–5 in the computer's memory, layer 6 read from disk; computed on cuda:0"
    )
    whole = Placement({"tgt_embed": "cpu", "decoder.0": "cpu"}, "cpu", ["decoder.0"])
    assert not whole.offloaded and whole.summary() == "all weights on in the computer's memory"


def test_a_model_that_fits_nowhere_is_refused_with_the_numbers():
    module = build_transformer(LLAMA_LIKE, seed=0)
    with pytest.raises(MemoryError, match="embeddings and output .* [kMG]B"):
        plan_placement(module, [("cpu", 10), ("disk", None)])
    resident = module_bytes(module) - sum(module_bytes(module.get_submodule(n)) for n in layer_names(module))
    with pytest.raises(MemoryError, match="fits on none of"):
        plan_placement(module, [("cpu", resident + 10)])
    everything = plan_placement(module, [("cpu", None)])
    assert not everything.offloaded


def test_a_folder_bigger_than_the_memory_set_for_the_test_opens_spread_out_and_agrees(tmp_path, monkeypatch):
    """attnlab.load of a folder whose weights exceed the host memory the test allows: whole layers go to disk
    through accelerate instead of a refusal, the notice says where, and every recorded entry equals the model's
    held whole (the same folder opened without a limit)."""
    import attnlab
    from attnlab.engine import memory
    from tests.support import hf_tiny

    model, _config = hf_tiny.llama()  # 2 layers
    folder = tmp_path / "llama"
    model.to(torch.bfloat16).save_pretrained(folder, safe_serialization=True)  # held as stored: bfloat16
    whole = attnlab.load(folder)
    reference = whole.trace(tgt=[3, 9, 4, 7, 2])
    weights = sum(p.numel() * p.element_size() for p in whole.module.checkpoint_tensors().values())
    layers = layer_names(whole.module)
    resident = weights - sum(module_bytes(whole.module.get_submodule(n)) for n in layers)
    one_layer = module_bytes(whole.module.get_submodule(layers[0]))
    monkeypatch.setattr(memory, "host_available", lambda: int((resident + 1.2 * one_layer) / 0.8))
    spread = attnlab.load(folder)
    assert spread.placement is not None and spread.placement.offloaded
    assert [spread.placement.where(n) for n in layers] == ["cpu", "disk"]
    assert any("layer 2 read from disk" in n for n in spread.metadata["notices"]), spread.metadata["notices"]
    got = spread.trace(tgt=[3, 9, 4, 7, 2])
    for name in reference.names():
        if isinstance(reference[name], torch.Tensor):
            assert torch.equal(got[name], reference[name]), name
    with pytest.raises(ValueError, match="spread out"):
        spread.trace(tgt=[3, 9], options=attnlab.RunOptions(precision="float32"))
    # recorded lean (engine/replay.py; on the CPU each site's Q, K, V and mask kept too), the disk layer is
    # brought in again to recompute its other entries on read
    spread.lean_above = 0
    lean = spread.trace(tgt=[3, 9, 4, 7, 2])
    assert lean.info["kept"] == "attention" and lean.stored_bytes() < got.stored_bytes()
    for name in reference.names():
        if isinstance(reference[name], torch.Tensor):
            assert torch.equal(lean[name], reference[name]), name


def test_the_app_counts_the_layers_that_stream_in(qtbot, tmp_path, monkeypatch, isolated_settings):
    """A spread-out model in the app: each run reports the layers read from elsewhere as they stream in (the busy
    bar counts them), the device label says the weights are spread out, and its tooltip where they live."""
    import attnlab
    from attnlab.engine import memory
    from attnlab.ui.window.main_window import MainWindow
    from tests.support import hf_tiny

    model, _config = hf_tiny.llama()
    folder = tmp_path / "llama"
    model.save_pretrained(folder, safe_serialization=True)
    whole = attnlab.load(folder)
    layers = layer_names(whole.module)
    weights = sum(p.numel() * p.element_size() for p in whole.module.checkpoint_tensors().values())
    resident = weights - sum(module_bytes(whole.module.get_submodule(n)) for n in layers)
    one_layer = module_bytes(whole.module.get_submodule(layers[0]))
    monkeypatch.setattr(memory, "host_available", lambda: int((resident + 1.2 * one_layer) / 0.8))
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    streamed: list[tuple[int, int]] = []
    w.session.layerStreamed.connect(lambda k, n: streamed.append((k, n)))
    with qtbot.waitSignal(w.session.traceReady, timeout=30000):
        w.session.set_src("12 7 40 5", debounce=False)
        w.open_checkpoint(str(folder))
    qtbot.waitUntil(lambda: (1, 1) in streamed, timeout=10000)  # layer 2 of 2, the one on disk
    assert set(streamed) == {(1, 1)}
    qtbot.waitUntil(lambda: "weights spread out" in w.device_label.text(), timeout=10000)
    assert "layer 2 read from disk" in w.device_label.toolTip()
