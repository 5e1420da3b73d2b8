"""Texts a newcomer reads (issue 32, item 9): a grammatical Unsure line whose percentages stay below the
threshold they are compared with, `attnlab info`'s provenance as a table of the settings that apply, and a
bundled language model that opens on a prompt Generate can continue."""

from __future__ import annotations

import json
import re

import pytest
import transformers

from attnlab.cli import main
from attnlab.engine.typed import UNSURE_BELOW, percent_below, unsure_notice
from attnlab.present.texts import example_sentence


# ---- the Unsure line ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prob", [0.31, 0.4972, 0.49996, 0.05])
def test_an_unsure_percentage_reads_below_the_threshold(prob):
    text = percent_below(prob)
    assert float(text.rstrip("%")) < UNSURE_BELOW * 100
    assert float(text.rstrip("%")) == pytest.approx(prob * 100, abs=0.5)


def test_the_unsure_line_says_what_was_chosen_and_how_likely():
    one = unsure_notice([("a", 0.4972)])
    assert one.startswith("Unsure: the model chose “a” with only 49.7% probability")
    assert f"under {UNSURE_BELOW:.0%}" in one and "less than" not in one and "50% probability (" not in one
    several = unsure_notice([("vous", 0.31), ("a", 0.4972)])
    assert "“vous” (31%) and “a” (49.7%), each with under" in several
    many = unsure_notice([(str(i), 0.2) for i in range(6)], limit=4)
    assert "and 2 more, each" in many and many.count("“") == 4


# ---- attnlab info -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    """A tiny GPT-2 folder written by transformers (config.json with GPT-2's own keys, no tokenizer)."""
    folder = tmp_path_factory.mktemp("gpt2")
    config = transformers.GPT2Config(n_embd=32, n_head=4, n_layer=2, n_positions=32, vocab_size=99)
    transformers.GPT2LMHeadModel(config).save_pretrained(str(folder))
    return folder


def test_info_prints_where_the_settings_that_apply_came_from_as_a_table(gpt2_folder, capsys):
    assert main(["info", str(gpt2_folder)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) < 200  # no 5,000-character JSON line
    lines = out.splitlines()
    start = lines.index("where each setting came from:")
    header = lines[start + 1].split()
    assert header == ["setting", "value", "from"]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("  ") or line.startswith("  ("):
            break
        field, value, source = re.split(r"\s{2,}", line.strip(), maxsplit=2)
        rows[field] = (value, source)
    # GPT-2's own config keys (transformers.GPT2Config) are named where they were read
    assert rows["d_model"] == ("32", "config.json (n_embd)") and rows["n_heads"] == ("4", "config.json (n_head)")
    assert rows["max_len"] == ("32", "config.json (n_positions)")
    assert main(["info", str(gpt2_folder), "--json"]) == 0
    settings = json.loads(capsys.readouterr().out)["metadata"]["settings"]
    hidden = int(re.search(r"\((\d+) more keep", out).group(1))
    assert len(rows) + hidden == len(settings) and len(rows) < len(settings) / 2
    assert all(settings[f]["source"] == source for f, (_value, source) in rows.items())


def test_model_info_shows_the_rows_attnlab_info_prints(gpt2_folder, capsys):
    """File → Model info… lists the same settings as `attnlab info` (not every field of the config)."""
    from attnlab.checkpoints import load_checkpoint
    from attnlab.ui.window.open_model import model_info_html

    assert main(["info", str(gpt2_folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("where each setting came from:") + 2
    fields = [line.split()[0] for line in lines[start:] if line.startswith("  ") and not line.startswith("  (")]
    fields = fields[: next((i for i, f in enumerate(fields) if not f.isidentifier()), len(fields))]
    html = model_info_html(load_checkpoint(gpt2_folder))
    shown = re.findall(r"<tr><td>([^<]+)</td>", html)
    assert shown == fields and "more keep attnlab" in html  # the rest counted, not listed


# ---- the bundled language model's prompt -------------------------------------------------------------------------
def test_the_bundled_language_models_prompt_leaves_generate_real_words():
    import attnlab
    from attnlab.checkpoints.bundled import bundled_path

    if not bundled_path("language").exists():
        pytest.skip("the bundled language model is not in resources/")
    model = attnlab.load_bundled("language")
    prompt = example_sentence(model)
    tok = model.tokenizer("tgt")
    specials = tok.specials.hidden_ids() | {tok.unk_id}
    words = []
    for trace in model.generate(prompt, max_new_tokens=3):  # greedy, what Generate appends press by press
        assert trace.info["next_id"] not in specials and re.search(r"\w", trace.info["next_token"])
        words.append(trace.info["next_token"])
    assert len(words) == 3
