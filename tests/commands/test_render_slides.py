"""`attnlab render LESSON --pdf` (a page per step, 1024 × 768, the notes extractable as text) and `--gif` (the
temperature, generation and training sweeps as frames that differ), read back with pypdf and Pillow."""

import re
import shutil
import subprocess
import sys
import unicodedata

import pytest
from PIL import Image, ImageChops, ImageSequence
from pypdf import PdfReader

from attnlab.cli import main
from attnlab.commands.render_slides import TEMPERATURES
from attnlab.present.lessons import bundled_lessons, read_lesson

TINY = ["--d-model", "16", "--heads", "4", "--d-ff", "32", "--enc-layers", "1", "--dec-layers", "2", "--max-len", "32"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "tiny.safetensors"
    assert main(["init", *TINY, "--seed", "5", "--out", str(path)]) == 0
    return path


def flat(text: str) -> str:
    """Text as read back from a PDF: ligatures (ﬁ) undone, white space runs as one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


def gif_frames(path):
    with Image.open(path) as image:
        return [frame.convert("RGB") for frame in ImageSequence.Iterator(image)]


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")


def test_bundled_lesson_to_pdf_one_page_per_step_with_its_note_as_text(tmp_path, capsys, qapp):
    path = next(p for p in bundled_lessons() if p.stem == "what-each-toggle-breaks")
    lesson = read_lesson(path)
    deck = tmp_path / "deck.pdf"
    assert main(["render", str(path), "--pdf", str(deck)]) == 0
    assert f"Wrote {len(lesson.steps)} pages" in capsys.readouterr().out
    pages = PdfReader(deck).pages
    assert len(pages) == len(lesson.steps)
    for i, (page, step) in enumerate(zip(pages, lesson.steps, strict=True)):
        width, height = float(page.mediabox.width), float(page.mediabox.height)
        assert width / height == pytest.approx(1024 / 768)  # projector shape (768 × 576 points = 1024 × 768 px)
        text = flat(page.extract_text())
        assert flat(step.note) in text, f"page {i + 1}: {text[:300]}"
        assert f"step {i + 1} of {len(lesson.steps)}" in text
        if step.question is not None:
            assert flat(step.question.text) in text
    if shutil.which("pdftotext"):  # poppler's reading agrees where it is installed
        first = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(deck), "-"], capture_output=True, text=True)
        assert flat(lesson.steps[0].note) in flat(first.stdout)


def test_temperature_gif_has_a_frame_per_temperature_and_they_differ(ckpt, tmp_path, qapp):
    gif = tmp_path / "t.gif"
    assert main(["render", "--checkpoint", str(ckpt), "--src", "the cat", "--gif", str(gif)]) == 0
    frames = gif_frames(gif)
    assert len(frames) == len(TEMPERATURES) and frames[0].size == (1024, 768)
    for a, b in zip(frames, frames[1:], strict=False):
        assert ImageChops.difference(a, b).getbbox() is not None


def test_training_gif_has_a_frame_per_snapshot(tmp_path, qapp):
    from attnlab.checkpoints.snapshots import load_snapshots

    steps = load_snapshots("translation").steps
    lesson = next(p for p in bundled_lessons() if p.stem == "transformer-step-by-step")
    gif = tmp_path / "train.gif"
    assert main(["render", str(lesson), "--gif", str(gif), "--sweep", "training"]) == 0
    frames = gif_frames(gif)
    assert len(frames) == len(steps)
    assert ImageChops.difference(frames[0], frames[-1]).getbbox() is not None


def test_generation_gif_adds_a_token_per_frame(ckpt, tmp_path, qapp):
    gif = tmp_path / "g.gif"
    args = ["render", "--checkpoint", str(ckpt), "--src", "the cat", "--gif", str(gif), "--sweep", "generation"]
    assert main([*args, "--frames", "3", "--stage", "dec.1.cross.weights"]) == 0
    frames = gif_frames(gif)
    assert 1 <= len(frames) <= 3
    for a, b in zip(frames, frames[1:], strict=False):  # each frame one decoder row more
        assert ImageChops.difference(a, b).getbbox() is not None


def test_gif_without_pillow_says_how_to_install_it(ckpt, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL fails as on a machine without it
    assert main(["render", "--checkpoint", str(ckpt), "--src", "x", "--gif", str(tmp_path / "a.gif")]) == 2
    err = capsys.readouterr().err
    assert 'pip install "attnlab[render]"' in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "a.gif").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pdf", "deck.pdf", "--src", "x"], "--pdf needs a lesson file"),
        (["LESSON"], "--pdf deck.pdf"),
        (["LESSON", "--pdf", "deck.pdf"], "step 2: no stage called 'enc.7.self.weights'"),
        (["--src", "x", "--out", "o"], "pictures need --stage"),
        (["LESSON", "--gif", "a.gif", "--frames", "0"], "--frames must be between 1 and 64"),
    ],
)
def test_bad_slide_requests_exit_2(ckpt, tmp_path, capsys, args, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lesson = tmp_path / "l.toml"
    lesson.write_text(
        f'model = "{ckpt}"\nsrc = "the cat"\n[[step]]\nstage = "src.tokens"\n[[step]]\nstage = "enc.7.self.weights"\n',
        encoding="utf-8",
    )
    argv = ["render", *[str(lesson) if a == "LESSON" else a for a in args]]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "deck.pdf").exists()
