"""--sample --top-k --top-p --seed (and --temperature) reach `attnlab generate`, `translate` and `trace --generate`
(issue 35): the same seed prints the same text, the flags give what LiveModel.generate gives with those options."""

from __future__ import annotations

import pytest

from attnlab.checkpoints import load_bundled
from attnlab.cli import main
from attnlab.engine.options import RunOptions

FLAGS = ["--sample", "--top-k", "20", "--top-p", "0.95", "--temperature", "1.4", "--seed", "11"]


def printed(capsys, args: list[str]) -> str:
    assert main(args) == 0
    return capsys.readouterr().out.strip()


def test_generate_with_a_seed_prints_the_same_text_as_the_api(capsys):
    first = printed(capsys, ["generate", "the cat", "--max-new-tokens", "4", *FLAGS])
    assert printed(capsys, ["generate", "the cat", "--max-new-tokens", "4", *FLAGS]) == first
    options = RunOptions(sample=True, top_k=20, top_p=0.95, temperature=1.4, seed=11, record=False)
    steps = list(load_bundled("language").generate("the cat", max_new_tokens=4, options=options))
    assert first == steps[-1].info["generated"]


def test_translate_and_trace_draw_the_same_tokens_with_the_flags(capsys, tmp_path):
    translated = printed(capsys, ["translate", "the cat sleeps", "--max-new-tokens", "3", *FLAGS])
    out = str(tmp_path / "t.npz")
    said = printed(capsys, ["trace", "--src", "the cat sleeps", "--generate", "3", "--out", out, "--no-lens", *FLAGS])
    assert said.splitlines()[0] == f"Generated: {translated}"
    greedy = printed(capsys, ["translate", "the cat sleeps", "--max-new-tokens", "3"])
    assert greedy == load_bundled("translation").translate("the cat sleeps", max_new_tokens=3)


@pytest.mark.parametrize("flag,value,word", [("--top-p", "2", "top_p"), ("--top-k", "-3", "top_k")])
def test_a_bad_value_exits_2_in_one_line(capsys, flag, value, word):
    code = main(["generate", "the cat", "--sample", flag, value])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and word in err
