"""Every command refuses in exactly one line (issue 38.6): a checkpoint with several problems, a model that cannot
be built from several sizes, malformed ATTNLAB_* settings: `attnlab COMMAND: …` once on stderr and exit 2, through
the one formatter (commands/refusal.py). info and eval printed the problems one per line before."""

from __future__ import annotations

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from attnlab import cli
from attnlab.checkpoints import save_checkpoint
from attnlab.commands.refusal import one_line
from tests.support.tiny import build_tiny_model


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """A checkpoint with three problems: two tensors missing and one of the wrong shape."""
    d = tmp_path_factory.mktemp("refusals")
    good = save_checkpoint(build_tiny_model("encoder-decoder"), d / "good.safetensors")
    with safe_open(str(good), "pt") as f:
        metadata = f.metadata()
    tensors = load_file(str(good))
    names = sorted(tensors)
    for name in names[:2]:
        del tensors[name]
    tensors[names[3]] = torch.zeros(3, 3)
    save_file(tensors, str(d / "broken.safetensors"), metadata=metadata)
    return str(d / "broken.safetensors")


def commands(broken: str, out: str) -> dict[str, list[str]]:
    return {
        "info": ["info", broken],
        "trace": ["trace", "--checkpoint", broken, "--src", "a cat", "--out", f"{out}/t.npz"],
        "render": ["render", "--checkpoint", broken, "--src", "a cat", "--stage", "src.tokens", "--out", f"{out}/r"],
        "eval": ["eval", broken],
        "translate": ["translate", "--checkpoint", broken, "a cat"],
        "generate": ["generate", "--checkpoint", broken, "a cat"],
    }


def assert_one_line(code: int, err: str, prog: str, *phrases: str) -> None:
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith(f"{prog}: ") and err.endswith("\n"), err
    for phrase in phrases:
        assert phrase in err, err


@pytest.mark.parametrize("name", ["info", "trace", "render", "eval", "translate", "generate"])
def test_a_checkpoint_with_several_problems_is_refused_in_one_line(name, broken, tmp_path, capsys):
    code = cli.main(commands(broken, str(tmp_path))[name])
    err = capsys.readouterr().err
    assert_one_line(code, err, f"attnlab {name}", "2 problems", "missing", "wrong shape")


def test_the_api_refuses_a_checkpoint_with_several_problems_in_one_line(broken):
    """Not only the commands: the CheckpointError itself is one line (the API, the app's dialog, the hostile
    bench's verdict), its problems joined with '; '."""
    import attnlab
    from attnlab.checkpoints import CheckpointError

    with pytest.raises(CheckpointError) as refused:
        attnlab.load(broken)
    message = str(refused.value)
    assert "\n" not in message and "2 problems: " in message and "missing" in message and "wrong shape" in message


def test_sizes_with_several_problems_are_one_line(tmp_path, capsys):
    code = cli.main(
        ["init", "--d-model", "30", "--heads", "4", "--d-ff", "0", "--out", str(tmp_path / "m.safetensors")]
    )
    assert_one_line(code, capsys.readouterr().err, "attnlab init", "d_ff", "d_model 30")


@pytest.mark.parametrize(
    ("variable", "value", "phrase"),
    [
        ("ATTNLAB_MEMORY_LIMIT", "1e9", "ATTNLAB_MEMORY_LIMIT='1e9' is not a number of bytes (e.g. 8000000000 or 8G)"),
        ("ATTNLAB_MEMORY_LIMIT", "-1", "ATTNLAB_MEMORY_LIMIT='-1' is not a number of bytes"),
        ("ATTNLAB_MEMORY_LIMIT", "²", "ATTNLAB_MEMORY_LIMIT='²' is not a number of bytes"),
        ("ATTNLAB_MEMORY_LIMIT", "0", "ATTNLAB_MEMORY_LIMIT='0' is no memory at all"),
        ("ATTNLAB_TORCH_THREADS", "four", "ATTNLAB_TORCH_THREADS='four' is not a number of threads"),
        ("ATTNLAB_DEBUG", "yes", "ATTNLAB_DEBUG='yes' is neither 0 nor 1"),
    ],
)
def test_a_malformed_setting_is_refused_before_anything_loads(variable, value, phrase, broken, monkeypatch, capsys):
    monkeypatch.setenv(variable, value)
    code = cli.main(["info", broken])  # the checkpoint is never read: the setting is what is wrong
    err = capsys.readouterr().err
    assert_one_line(code, err, "attnlab info", phrase)
    assert "checkpoint" not in err


def test_two_malformed_settings_are_one_line_naming_both(broken, monkeypatch, capsys):
    monkeypatch.setenv("ATTNLAB_MEMORY_LIMIT", "8 gigs")
    monkeypatch.setenv("ATTNLAB_MALLOC_TUNING", "off")
    code = cli.main(["info", broken])
    assert_one_line(code, capsys.readouterr().err, "attnlab info", "ATTNLAB_MEMORY_LIMIT=", "ATTNLAB_MALLOC_TUNING=")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Cannot load 'x'; 2 problems:\n- a\n- b", "Cannot load 'x'; 2 problems: a; b"),
        ("These options cannot run on this model:\n- a\n- b", "These options cannot run on this model: a; b"),
        ("first\r\nsecond\u2028third", "first; second; third"),
        ("a\x1b[31mred\x00", "a [31mred"),
        ("", "ValueError"),
    ],
)
def test_the_formatter_makes_one_line(text, expected):
    assert one_line(ValueError(text)) == expected


def test_the_formatter_cuts_a_long_message():
    line = one_line("x" * 5000, limit=100)
    assert line == "x" * 100 + "…"
