"""`attnlab trace --out` counted before it writes (issue 38): a tiny Llama with 131,072 positions traced on a long
input, its file's memory under ATTNLAB_MEMORY_LIMIT and its size against the free space of the folder written to;
refused in one line, nothing written. The limit is set just above what the process holds, so nothing big is ever
allocated."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest

from attnlab.cli import main
from attnlab.engine import output_budget
from attnlab.engine.memory import LIMIT_VARIABLE, RunTooBig
from attnlab.engine.trace_file import plan_npz, write_npz
from attnlab.limits import gb

POSITIONS = 131_072
TOKENS = 1_200  # words of the input below (about as many tokens)
Usage = namedtuple("Usage", "total used free")  # what shutil.disk_usage returns


@pytest.fixture(scope="module")
def long_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face folder: a 25k-parameter Llama with 131,072 positions and a byte-level tokenizer."""
    import torch
    import transformers

    from tests.support.chat_families import FAMILIES, tiny_tokenizer

    folder = tmp_path_factory.mktemp("long-llama")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=400,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=POSITIONS,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    family = FAMILIES["llama3"]
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=tiny_tokenizer(family), eos_token=family.eos)
    tok.save_pretrained(folder)
    return folder


def resident() -> int:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) * 1024


def trace_args(folder: Path, out: Path) -> list[str]:
    return ["trace", "--checkpoint", str(folder), "--src", " ".join(["a"] * TOKENS), "--no-lens", "--out", str(out)]


def test_a_file_the_memory_limit_cannot_hold_is_refused_before_writing(long_llama, tmp_path, monkeypatch, capsys):
    out = tmp_path / "t.npz"
    # the run itself fits (its trace stores Q, K, V and a few [T, d] rows; the [H, T, T] maps are derived), but
    # writing materialises one [4, T, T] map after another, several at once: far more than 150 MB above now
    monkeypatch.setenv(LIMIT_VARIABLE, str(resident() + 150_000_000))
    assert main(trace_args(long_llama, out)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("attnlab trace: writing ") and "of memory, but only" in line
    assert line.endswith("nothing was written.")
    assert not list(tmp_path.iterdir())  # no file, no temporary left


def test_a_file_larger_than_the_free_disk_is_refused_naming_the_folder(long_llama, tmp_path, monkeypatch, capsys):
    out = tmp_path / "deep" / "t.npz"
    (tmp_path / "deep").mkdir()
    asked: list[Path] = []

    def tiny_disk(folder: str | Path) -> Usage:
        asked.append(Path(folder))
        return Usage(10**9, 10**9 - 5_000, 5_000)  # 5 kB free

    monkeypatch.setattr(output_budget.shutil, "disk_usage", tiny_disk)
    assert main(trace_args(long_llama, out)) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert f"the folder {str(tmp_path / 'deep')!r} has only 5 kB free" in line and "nothing was written" in line
    assert asked == [tmp_path / "deep"] and not list((tmp_path / "deep").iterdir())


def test_the_api_and_the_app_export_refuse_too(long_llama, tmp_path, monkeypatch):
    """Trace.save_npz (the API, File → Export → .npz) checks the same before its first byte."""
    from attnlab.commands.loading import load_any
    from attnlab.present.window_facts import save_run

    trace = load_any(str(long_llama)).trace("a a a a")
    plan = plan_npz(trace)
    free = plan.file_bytes - 1
    monkeypatch.setattr(output_budget.shutil, "disk_usage", lambda _f: Usage(10**12, 10**12 - free, free))
    for write in (lambda: write_npz(trace, tmp_path / "a.npz"), lambda: save_run(trace, tmp_path / "b.npz")):
        with pytest.raises(RunTooBig, match=r"on disk, but the folder .* has only .* free; nothing was written$"):
            write()
    assert not list(tmp_path.iterdir())
    monkeypatch.undo()  # the real disk
    assert save_run(trace, tmp_path / "b.npz").stat().st_size == pytest.approx(plan.file_bytes, rel=0.05)


@pytest.mark.parametrize(
    ("n", "said"),
    [(0, "0 bytes"), (999, "999 bytes"), (5_000, "5 kB"), (999_999, gb(1e6)), (4e7, gb(4e7)), (4.9e9, "4.9 GB")],
)
def test_amounts_are_never_zero_megabytes(n, said):
    assert output_budget.amount(n) == said
