"""GGUF files (issue 36): a tiny model written by the gguf package's writer in each listed ggml type opens in attnlab,
and agrees with transformers loading the same file (`gguf_file=`, dequantized by transformers' own GGUF loader):
logits to 1e-4 relative in float32, the tokenizer's ids, greedy generation; the banner and Model info say what
was dequantized to what. Every listed type for the Llama layout; Qwen2 and Gemma 2 in two, Qwen3, Gemma 3, Phi-3
and GPT-2 in one each (the dequantization is shared, the layout is not)."""

from __future__ import annotations

import pytest
import torch
import transformers

import attnlab
from attnlab.checkpoints import CheckpointError, load_checkpoint
from tests.support.gguf_tiny import K_QUANTS, write_gguf

TEXT = "the cat sat on the mat"
TYPES = ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", *K_QUANTS)
ARCHS = ("llama", "qwen2", "gemma2")
# every type for Llama; the other layouts in a few types each (the type's reading is shared, the layout is not)
CASES = [("llama", t) for t in TYPES] + [("qwen2", "Q4_1"), ("qwen2", "Q4_K"), ("gemma2", "Q8_0"), ("gemma2", "Q6_K")]
CASES += [("qwen3", "Q5_1"), ("gemma3", "Q4_K"), ("phi3", "Q8_0"), ("gpt2", "Q3_K")]  # the other layouts, once each


def reference(path):
    """transformers' model and tokenizer from the same file."""
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    )
    return model.eval(), transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize(("arch", "qtype"), CASES)
def test_logits_and_ids_equal_transformers_reading_the_same_file(tmp_path, arch, qtype):
    path = write_gguf(tmp_path, arch, qtype)
    ours = load_checkpoint(path, dtype="float32")
    model, tokenizer = reference(path)
    trace = ours.trace(None, TEXT)
    ids = [int(i) for i in trace["tgt.ids"]]
    assert ids == tokenizer(TEXT)["input_ids"]
    with torch.no_grad():
        theirs = model(torch.tensor([ids])).logits[0]  # [T, V]
    assert relative(trace["logits"].float(), theirs) <= 1e-4
    if qtype != "F32":
        assert qtype in ours.metadata["quantization"]["text"] and ours.metadata["quantization"]["text"].endswith(
            " float32"
        )


@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_generation_is_transformers_own(tmp_path, arch):
    path = write_gguf(tmp_path, arch, "Q4_0")
    ours = attnlab.load(path)
    traces = list(ours.generate(TEXT, max_new_tokens=6))
    generated = [int(i) for i in traces[-1]["tgt.ids"]] + [traces[-1].info["next_id"]]
    model, tokenizer = reference(path)
    prompt = torch.tensor([tokenizer(TEXT)["input_ids"]])
    with torch.no_grad():
        theirs = model.generate(prompt, do_sample=False, num_beams=1, max_new_tokens=len(generated) - prompt.shape[1])
    assert generated == theirs[0].tolist()[: len(generated)] and len(generated) > prompt.shape[1]


def test_the_banner_and_model_info_say_what_was_dequantized(tmp_path):
    path = write_gguf(tmp_path, "llama", "Q4_1")
    model = load_checkpoint(path)
    said = model.metadata["quantization"]["text"]
    # Q4_1: blocks of 32 values in 2 + 2 + 16 bytes: 5 bits per weight (the norms, in F32, raise the average)
    assert said.startswith("dequantized from Q4_1 (") and said.endswith(") to float32") and "also F32" in said
    assert model.metadata["notice"].startswith("Dequantized from Q4_1")
    assert "GGUF" in model.metadata["source"] and said in model.metadata["source"]
    assert model.metadata["settings"]["d_model"]["source"] == "GGUF metadata (llama.embedding_length)"
    assert model.metadata["chat_template"].startswith("{% for m in messages %}")
    assert next(iter(model.module.parameters())).dtype == torch.float32


def test_bfloat16_is_held_as_asked_and_agrees_with_the_float32_reading(tmp_path):
    path = write_gguf(tmp_path, "gemma2", "Q8_0")
    wide, narrow = load_checkpoint(path), load_checkpoint(path, dtype="bfloat16")
    assert next(iter(narrow.module.parameters())).dtype == torch.bfloat16
    assert narrow.metadata["quantization"]["text"].endswith("to bfloat16")
    for name, w in wide.module.checkpoint_tensors().items():
        n = narrow.module.checkpoint_tensors()[name]
        assert torch.equal(n, w.to(torch.bfloat16)), name


def test_an_architecture_attnlab_does_not_run_is_refused_naming_it(tmp_path):
    path = write_gguf(tmp_path, "llama", "Q8_0")
    data = path.read_bytes().replace(b"llama", b"mamba")  # every key says mamba: general.architecture too
    (tmp_path / "m.gguf").write_bytes(data)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(tmp_path / "m.gguf")
    message = str(caught.value)
    assert "'mamba'" in message and "llama" in message and len(message.splitlines()) == 1


def test_weights_the_memory_cannot_hold_are_refused_before_one_is_dequantized(tmp_path, monkeypatch):
    from attnlab.checkpoints import gguf_file
    from attnlab.engine import memory

    path = write_gguf(tmp_path, "llama", "Q4_0")
    monkeypatch.setattr(memory, "available_on", lambda device: 1_000_000)  # 1 MB of memory
    dequantized = []
    monkeypatch.setattr(gguf_file, "dequantized", lambda *args: dequantized.append(args))
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    n = sum(p.numel() for p in reference(path)[0].parameters())  # transformers' count of the same weights
    assert f"({n:,} parameters)" in str(caught.value) and "in float32" in str(caught.value)
    assert not dequantized


def test_llama3_rope_scaling_is_read_back_from_the_rope_freqs_tensor(tmp_path):
    """llama.cpp keeps Llama 3's rope scaling only as rope_freqs (the factor each frequency is divided by);
    attnlab finds the settings that give those factors, and runs as transformers runs the model it was written
    from (transformers' own GGUF loader leaves rope_freqs unread)."""
    rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0}
    rope |= {"high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    path, model = write_gguf(tmp_path, "llama", "F32", rope_scaling=rope)
    ours = load_checkpoint(path)
    config = ours.config
    assert (config.rope_scaling, config.rope_factor, config.rope_original_max_len) == ("llama3", 32.0, 8192)
    assert (config.rope_low_freq_factor, config.rope_high_freq_factor, config.rope_theta) == (1.0, 4.0, 500000.0)
    trace = ours.trace(None, TEXT)
    with torch.no_grad():
        theirs = model(torch.tensor([[int(i) for i in trace["tgt.ids"]]])).logits[0]
    assert relative(trace["logits"].float(), theirs) <= 1e-4


def test_a_gemma_file_runs_as_the_transformers_model_it_was_written_from(tmp_path):
    """transformers reads no gemma (1) GGUF files; attnlab does, llama.cpp's 1 + w norms given back as w, and runs
    as the transformers model the file was converted from."""
    path, model = write_gguf(tmp_path, "gemma", "F32")
    trace = load_checkpoint(path).trace(None, TEXT)
    with torch.no_grad():
        theirs = model(torch.tensor([[int(i) for i in trace["tgt.ids"]]])).logits[0]
    assert relative(trace["logits"].float(), theirs) <= 1e-4
