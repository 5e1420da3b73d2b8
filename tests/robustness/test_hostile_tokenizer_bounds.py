"""A tokenizer that multiplies text is refused in one line, in the CLI, the API and the window alike (issue 38).

The hostile tokenizer.json is legal: a chain of `Replace` normalizers, each turning every "a" into ten (a few
hundred bytes of JSON; seven of them make ten million pieces of each "a"). On main the CLI was killed by it
(SIGABRT under a memory limit), because tokenization ran in-process with no bound on the pieces produced; the
app's tokenizer child had no memory cap, and its time limit was set by the launcher only. The bounds are
engine/tokenizer_bounds.py and engine/tokenizer_process.py; the references here are the `tokenizers`
library's own normalize_str and encode.
"""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json
import math

import pytest
from tokenizers import Tokenizer as HF
from tokenizers import decoders, models, normalizers, pre_tokenizers

from attnlab.checkpoints import load_checkpoint, random_model
from attnlab.engine import tokenizer_process
from attnlab.engine.tokenizer import BPETokenizer, TokenizerError
from attnlab.engine.tokenizer_bounds import expansion_bound, normalizer_bound
from attnlab.limits import CHARS_PER_POSITION, IN_PROCESS_CHARS, MAX_PIECES_PER_CHAR, MAX_SENTENCE_CHARS
from attnlab.session import Session
from tests.robustness.test_hostile_app_tokenizer import SLOW_TEXT, slow_tokenizer
from tests.support.hostile_files import TINY, cli_in_child, gpt2_folder

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="the child process is waited on with select (POSIX)"),
    pytest.mark.usefixtures("isolated_settings"),
]
WAIT = 20000
# a vocabulary whose good words have no "a" (the bomb multiplies each "a"); 11 entries: the tiny GPT-2's vocab
VOCAB = ["<pad>", "<s>", "</s>", "<unk>", "the", "dog", "sits", "on", "mud", "red", "b"]
GOOD = "the dog sits on mud"


def bomb(levels: int, fan: int = 10, vocab: list[str] = VOCAB) -> HF:
    """A word-level tokenizer whose normalizer turns each "a" into fan**levels words."""
    hf = HF(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    hf.normalizer = normalizers.Sequence([normalizers.Replace("a", " ".join(["a"] * fan))] * levels)
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return hf


def bomb_folder(tmp_path, levels: int = 7):
    folder = gpt2_folder(tmp_path / "bomb")
    bomb(levels).save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture
def no_time_limit(monkeypatch):
    """As the CLI and the API run: no time limit set on this thread or the process."""
    monkeypatch.setattr(tokenizer_process, "_timeout_s", None)
    monkeypatch.setattr(tokenizer_process._thread, "timeout_s", None, raising=False)


# ---- the bound read from a normalizer's JSON ------------------------------------------------------------
REAL_NORMALIZERS = {
    "bert": normalizers.BertNormalizer(lowercase=True, strip_accents=True, handle_chinese_chars=True),
    "nfkc-lower": normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()]),
    "llama": normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]),
    "nfd-strip": normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()]),
}
# characters that grow most under Unicode normalization: U+FDFA (18 under NFKD), U+0130 (İ: 2 lower-cased),
# U+1F82 (4 under NFD), a CJK character (padded with spaces by BERT)
GROWING = "\ufdfa\u0130\u1f82中 ab"


@pytest.mark.parametrize("name", sorted(REAL_NORMALIZERS))
def test_the_bound_of_real_normalizers_is_small_and_holds(name):
    normalizer = REAL_NORMALIZERS[name]
    hf = HF(models.WordLevel({"<unk>": 0}, unk_token="<unk>"))
    hf.normalizer = normalizer
    bound = normalizer_bound(hf)
    assert bound * MAX_SENTENCE_CHARS <= IN_PROCESS_CHARS  # any text the app accepts stays in-process
    for text in (GROWING, GROWING * 7, "plain words"):
        assert len(normalizer.normalize_str(text)) <= bound * len(text)


def test_the_bound_of_a_sentencepiece_charsmap_holds(tmp_path):
    from tests.support import tokenizer_layouts as layouts

    for folder in ("spm", "t5"):
        (tmp_path / folder).mkdir()
    layouts.sentencepiece_model(tmp_path / "spm", "spiece.model", "t5", "unigram")
    converted = layouts.saved_by_transformers(tmp_path / "spm", tmp_path / "t5", "t5")  # a Precompiled charsmap
    hf = HF.from_file(str(converted / "tokenizer.json"))
    assert json.loads(hf.normalizer.__getstate__())["type"] == "Precompiled"
    bound = normalizer_bound(hf)
    assert bound * MAX_SENTENCE_CHARS <= IN_PROCESS_CHARS
    for text in (GROWING, "\u2460\u2461 \u3392 plain"):  # circled digits, a squared unit: NFKC-like mappings
        assert len(hf.normalizer.normalize_str(text)) <= bound * len(text)


def test_the_bomb_has_no_small_bound_and_unknown_normalizers_none():
    assert normalizer_bound(bomb(7)) >= 10**7  # ten million pieces of each "a"
    assert expansion_bound({"type": "SomethingNew"}) == math.inf
    assert expansion_bound({"type": "Sequence", "normalizers": "not a list"}) == math.inf


# ---- the CLI, the API, the window ------------------------------------------------------------------------
def test_the_cli_refuses_a_tokenizer_bomb_in_one_line(tmp_path):
    folder = bomb_folder(tmp_path)
    out = tmp_path / "trace.npz"
    proc = cli_in_child("trace", "--checkpoint", str(folder), "--src", "a cat", "--out", str(out), timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])  # refused, never a signal
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "multiplies text" in lines[0], proc.stderr[-2000:]
    assert f"more than the {MAX_PIECES_PER_CHAR} per character" in lines[0]
    assert not out.exists()


def test_the_api_refuses_a_bomb_and_the_model_still_reads(tmp_path, no_time_limit):
    model = load_checkpoint(str(bomb_folder(tmp_path)))
    with pytest.raises(TokenizerError) as refused:
        model.trace("a cat")
    assert "multiplies text" in str(refused.value) and "\n" not in str(refused.value)
    reference = bomb(7).encode(GOOD, add_special_tokens=False).ids  # the tokenizers library's own ids
    assert model.trace(GOOD)["tgt.ids"].tolist() == reference


def test_a_mild_multiplier_is_refused_in_process_too(monkeypatch, no_time_limit):
    started = []
    monkeypatch.setattr(tokenizer_process, "_Child", lambda *a: started.append(a))
    tok = BPETokenizer(bomb(2))  # 100 words per "a": small enough to run in-process, past the bound
    assert len(bomb(2).encode("a", add_special_tokens=False).ids) > MAX_PIECES_PER_CHAR
    with pytest.raises(TokenizerError, match="turns 1 characters into 100 pieces"):
        tok.encode("a")
    assert tok.encode("the dog")[1] == [4, 5] and not started


def test_a_tokenizer_past_its_memory_cap_is_stopped_in_one_line(monkeypatch, no_time_limit):
    monkeypatch.setattr(tokenizer_process, "TOKENIZER_MEMORY_CAP", 256 << 20)
    hf = HF(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="<unk>"))
    hf.normalizer = normalizers.Replace("a", "b" * 2_000_000)  # one step: 500 letters make a billion
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = BPETokenizer(hf)
    with pytest.raises(TokenizerError) as refused:
        tok.encode("a" * 500)
    assert "needed more than 0.25 GB of memory" in str(refused.value) and "\n" not in str(refused.value)
    assert tok.encode("the dog")[1] == [4, 5]  # a new child for the next text


def test_a_decoder_that_multiplies_text_is_refused_in_one_line(tmp_path):
    folder = gpt2_folder(tmp_path / "decoder-bomb")
    hf = bomb(0)
    hf.decoder = decoders.Sequence([decoders.Replace("d", " ".join(["d"] * 10))] * 7)  # "dog": 10**7 words
    hf.save(str(folder / "tokenizer.json"))
    model = load_checkpoint(str(folder))
    with pytest.raises(TokenizerError) as refused:
        model.tgt_tokenizer.decode([4, 5])
    assert "decoder could turn" in str(refused.value) and "\n" not in str(refused.value)
    assert model.trace(GOOD)["tgt.ids"].tolist() == hf.encode(GOOD, add_special_tokens=False).ids  # still reads


def test_a_text_is_cut_to_the_model_length_before_it_is_tokenized(monkeypatch, no_time_limit):
    model = random_model(TINY, tokenizer=BPETokenizer(bomb(1, vocab=VOCAB)))
    seen = []
    encode = model.src_tokenizer.encode
    monkeypatch.setattr(model.src_tokenizer, "encode", lambda text: seen.append(len(text)) or encode(text))
    trace = model.trace("the dog " * 1000)
    most = TINY.max_len * CHARS_PER_POSITION
    assert seen and max(seen) <= most
    assert any(f"only the first {most:,}" in n and "were tokenized" in n for n in trace.notices)


def test_the_window_refuses_a_bomb_and_keeps_its_model(qtbot, no_time_limit):
    session = Session()
    model = random_model(TINY, tokenizer=BPETokenizer(bomb(7)))
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: model, src=GOOD)
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        session.set_src("a cat", debounce=False)
    assert "multiplies text" in failed.args[0] and "\n" not in failed.args[0]
    assert session.model is model
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.set_src("the red dog", debounce=False)
    assert session.trace["src.tokens"][:3] == ["the", "red", "dog"]
    session.shutdown()


def test_a_window_built_by_a_test_says_so_in_its_status_bar_and_keeps_its_run(qtbot, open_window, no_time_limit):
    win = open_window()  # built as a test or the Python API builds one: no launcher set any limit
    model = random_model(TINY, tokenizer=BPETokenizer(bomb(7)))
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        win.session.load_async(lambda: model, src=GOOD)
    kept = win.session.trace
    with qtbot.waitSignal(win.session.failed, timeout=WAIT):
        win.session.set_src("a cat", debounce=False)
    line = win.statusBar().currentMessage()
    assert line.startswith("Not run: the tokenizer turns") and "multiplies text" in line
    assert win.session.model is model and win.session.trace is kept


def test_a_session_built_anywhere_owns_the_time_limit(qtbot, monkeypatch, no_time_limit):
    monkeypatch.setattr("attnlab.session_jobs.TOKENIZE_TIMEOUT_S", 1.5)
    session = Session()  # no launcher: nothing set the process's limit
    assert tokenizer_process.encode_timeout() is None
    with qtbot.waitSignal(session.traceReady, timeout=WAIT):
        session.load_async(lambda: random_model(TINY, tokenizer=slow_tokenizer()), src="the cat")
    with qtbot.waitSignal(session.failed, timeout=WAIT) as failed:
        session.set_src(SLOW_TEXT, debounce=False)
    assert "took longer than 1.5 s" in failed.args[0]
    assert tokenizer_process.encode_timeout() is None  # the limit is the session's worker's, not this thread's
    session.shutdown()
