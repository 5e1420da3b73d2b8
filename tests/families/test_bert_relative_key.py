"""BERT with position_embedding_type relative_key / relative_key_query (engine/relative_key.py) against the
last transformers that implements it, 4.46.3, run in a CHILD process (tests/support/bert_relkey_reference.py): the
child saves tiny random BERTs as Hugging Face folders with their eager outputs; attnlab opens the folders
(today's transformers not involved) and must agree on every layer's attention weights, the hidden states and the
logits; each recorded term equals an einsum over the saved distance table; the toggles run; what attnlab cannot
represent is refused in one line naming the field."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from attnlab.checkpoints.errors import CheckpointError
from attnlab.checkpoints.hf import config_from_hf
from attnlab.checkpoints.hf_folder import load_hf_folder
from attnlab.engine import names
from attnlab.engine.budget import estimate_trace_bytes
from attnlab.engine.options import RunOptions, head_choices
from attnlab.engine.trace import Recorder, finish
from attnlab.present.explain import explanation_html
from attnlab.present.kinds import view_for
from attnlab.present.stages import ViewState, stage_keys_for_config, stages_for
from attnlab.ui.stages import panel_class_for

TOL = 1e-4
OLD = ("transformers==4.46.3", "tokenizers==0.20.3", "huggingface_hub==0.26.5")
SCRIPT = Path(__file__).resolve().parents[1] / "support" / "bert_relkey_reference.py"
CASES = ("bert_relative_key", "bert_relative_key_query", "bert_relative_key_query_base")
M = 16  # max_position_embeddings of the reference models


def old_version(folder: Path) -> str:
    """transformers' version importable from `folder` alone ('' when none)."""
    run = subprocess.run(
        [sys.executable, "-c", "import transformers; print(transformers.__version__)"],
        env={**os.environ, "PYTHONPATH": str(folder)},
        capture_output=True,
        text=True,
    )
    return run.stdout.strip() if run.returncode == 0 else ""


@pytest.fixture(scope="session")
def old_transformers() -> Path:
    """The folder holding transformers 4.46.3 (ATTNLAB_TF4, default /tmp/tf4), installed there when missing;
    the tests skip only when that install fails."""
    folder = Path(os.environ.get("ATTNLAB_TF4", "/tmp/tf4"))
    if old_version(folder) == "4.46.3":
        return folder
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--target", str(folder), *OLD, "--no-deps", "--upgrade", "-q"],
        capture_output=True,
        text=True,
    )
    if install.returncode != 0 or old_version(folder) != "4.46.3":
        pytest.skip(f"transformers 4.46.3 could not be installed into {folder}: {install.stderr.strip()[-300:]}")
    return folder


@pytest.fixture(scope="module")
def reference(old_transformers: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bert_relkey")
    subprocess.run(
        [sys.executable, str(SCRIPT), str(out)],
        env={**os.environ, "PYTHONPATH": str(old_transformers)},
        check=True,
        capture_output=True,
    )
    return out


def opened(reference: Path, name: str):
    return load_hf_folder(reference / name), load_file(str(reference / f"{name}.outputs.safetensors"))


def recorded(live, ids: torch.Tensor, options: RunOptions | None = None, eager: bool = False):
    options = options or RunOptions()
    rec = Recorder(True, eager=eager)
    with torch.inference_mode():
        logits = live.module(ids[None], rec=rec, options=options)
    return logits[0], finish(rec, live.config, options.resolved(live.config), "cpu")


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("eager", [False, True], ids=["lazy", "eager"])
def test_every_layer_agrees_with_transformers_4_46(reference, name, eager):
    live, ref = opened(reference, name)
    config = live.config
    assert config.positional == "none" and config.rel_key_span == M
    logits, trace = recorded(live, ref["ids"], eager=eager)
    for i in range(config.n_encoder_layers):
        assert (trace[f"enc.{i}.self.weights"] - ref[f"attention.{i}"]).abs().max() <= TOL, (name, i)
    states = ["src.input"] + [f"enc.{i}.out" for i in range(config.n_encoder_layers)]
    for i, state in enumerate(states):
        assert (trace[state] - ref[f"hidden.{i}"]).abs().max() <= TOL, (name, state)
    if "logits" in ref:
        assert (logits - ref["logits"]).abs().max() <= TOL
    with torch.inference_mode():  # the non-recording path folds the terms into the fused kernel's mask
        fast = live.module(ref["ids"][None])[0]
    assert (fast - logits).abs().max() <= TOL


@pytest.mark.parametrize("name", CASES[:2])
def test_each_term_is_the_einsum_over_the_saved_distance_table(reference, name):
    live, ref = opened(reference, name)
    saved = load_file(str(reference / name / "model.safetensors"))
    _logits, trace = recorded(live, ref["ids"])
    T = len(ref["ids"])
    pos = torch.arange(T)
    rows = pos[:, None] - pos[None, :] + M - 1  # [T, T]
    assert torch.equal(trace[names.rel_entry("enc", "distance")], pos[:, None] - pos[None, :])
    for i in range(live.config.n_encoder_layers):
        site = f"enc.{i}.self"
        table = saved[f"bert.encoder.layer.{i}.attention.self.distance_embedding.weight"]  # [2M - 1, dk]
        assert table.shape == (2 * M - 1, live.config.d_head)
        r = table[rows]  # [T, T, dk]
        q, k = trace[f"{site}.q"], trace[f"{site}.k"]  # [H, T, dk]
        by_query = torch.einsum("hid,ijd->hij", q, r)
        torch.testing.assert_close(trace[f"{site}.rel_key"], by_query, atol=1e-5, rtol=0)
        expected = q @ k.transpose(-1, -2) + by_query
        if name.endswith("query"):
            by_key = torch.einsum("hjd,ijd->hij", k, r)
            torch.testing.assert_close(trace[f"{site}.rel_query"], by_key, atol=1e-5, rtol=0)
            expected = expected + by_key
        else:
            assert f"{site}.rel_query" not in trace
        torch.testing.assert_close(trace[f"{site}.scores"], expected, atol=1e-4, rtol=0)


def test_the_terms_are_drawn_before_the_score(reference, qapp):
    live, ref = opened(reference, "bert_relative_key_query")
    trace = live.trace(" ".join(str(int(i)) for i in ref["ids"]), "")  # no tokenizer: the ids as numbers
    assert torch.equal(trace["src.ids"], ref["ids"])
    stages = [s for s in stages_for(trace) if s.site == "enc.1.self"]
    assert [s.kind for s in stages][:5] == ["qkv", "rel_key", "rel_query", "scores", "scaled"]
    assert stage_keys_for_config(trace.config) == [s.key for s in stages_for(trace)]
    panel = panel_class_for("rel_key")()
    try:
        for stage in stages[1:3]:
            panel.show_stage(trace, stage, ViewState(head=3))
            data = panel.shown_data()
            np.testing.assert_array_equal(data["matrix"], trace[stage.key][3].numpy())
            T = len(ref["ids"])
            expected_rows = np.arange(T)[:, None] - np.arange(T)[None, :] + M - 1
            np.testing.assert_array_equal(data["rows"]["matrix"].astype(np.int64), expected_rows)
    finally:
        panel.close()
    by_kind = {s.kind: s for s in stages}
    assert "scores = (Q Kᵀ + Q·R(i−j)ᵀ + K·R(i−j)ᵀ) / √d<sub>k</sub>" in explanation_html(by_kind["scores"], trace)
    assert f"R<sub>i − j + {M - 1}</sub>" in explanation_html(by_kind["rel_key"], trace)
    assert "S′ = S / √d<sub>k</sub>, &nbsp; S = Q Kᵀ + Q·R(i−j)ᵀ + K·R(i−j)ᵀ" in explanation_html(
        by_kind["scaled"], trace
    )
    score = view_for(trace, by_kind["scores"], ViewState())
    assert score.matrix.title.startswith("score = QKᵀ + Q·R(i−j)ᵀ + K·R(i−j)ᵀ")


def test_positions_off_drops_the_terms_and_heads_keep_their_width(reference):
    live, ref = opened(reference, "bert_relative_key")
    config = live.config
    on_logits, on = recorded(live, ref["ids"])
    off_logits, off = recorded(live, ref["ids"], RunOptions(positional=False), eager=True)
    assert "enc.0.self.rel_key" not in off and names.rel_entry("enc", "distance") not in off
    q, k = off["enc.0.self.q"], off["enc.0.self.k"]
    torch.testing.assert_close(off["enc.0.self.scores"], q @ k.transpose(-1, -2), atol=1e-5, rtol=0)
    assert (off_logits - on_logits).abs().max() > 1e-2
    assert head_choices(config) == [config.n_heads]
    problems = RunOptions(n_heads=2).problems(config)
    assert any("relative_key" in p and "keeps its 4 heads" in p for p in problems)
    for options in (RunOptions(scale=False), RunOptions(projections=False), RunOptions(norm="pre")):
        logits, trace = recorded(live, ref["ids"], options)
        assert torch.isfinite(logits).all() and "enc.1.self.rel_key" in trace
        with torch.inference_mode():
            fast = live.module(ref["ids"][None], options=options)[0]
        assert (fast - logits).abs().max() <= TOL


def test_the_budget_counts_the_stored_terms(reference):
    """The stored scores and terms [H, T, T] a layer (the sites are recorded step by step) are in the estimate:
    what switching the positions on adds to the estimate covers what it adds to the trace."""
    live, _ref = opened(reference, "bert_relative_key_query")
    text = " ".join(str(i) for i in range(5, 5 + M))  # the longest input: M tokens
    on, off = RunOptions(), RunOptions(positional=False)
    stored = live.trace(text, "", on).stored_bytes() - live.trace(text, "", off).stored_bytes()
    estimated = estimate_trace_bytes(live.config, on, M, 0) - estimate_trace_bytes(live.config, off, M, 0)
    assert stored > 0 and stored <= estimated <= 1.5 * stored


def hf_config(**changes) -> dict:
    base = dict(
        model_type="bert",
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=16,
    )
    return {**base, **changes}


@pytest.mark.parametrize(
    "changes",
    [
        dict(position_embedding_type="relative_bucket"),
        dict(model_type="roberta", position_embedding_type="relative_key", pad_token_id=1),
    ],
)
def test_what_attnlab_cannot_represent_is_refused_in_one_line(changes):
    with pytest.raises((CheckpointError, ValueError)) as refused:
        config_from_hf(hf_config(**changes))
    message = str(refused.value)
    assert "position_embedding_type" in message and "\n" not in message


def test_the_relative_types_map_to_the_engine_fields():
    for kind, terms in (("relative_key", "key"), ("relative_key_query", "key_query"), ("absolute", "")):
        config = config_from_hf(hf_config(position_embedding_type=kind))
        assert config.rel_key_terms == terms
        assert config.adds_position_table == (kind == "absolute")
