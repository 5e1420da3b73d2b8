"""`attnlab render` counts what it draws before it draws it (issue 38): a GIF's frames (all of them when their
number is known, each one before it is drawn otherwise) and a PNG picture at its scale, against the memory there
is; refused in one line, nothing written."""

import pytest

from attnlab.cli import main
from attnlab.commands import drawing
from attnlab.commands.render_slides import TEMPERATURES
from attnlab.engine import output_budget

TINY = ["--d-model", "16", "--heads", "4", "--d-ff", "32", "--enc-layers", "1", "--dec-layers", "2", "--max-len", "32"]
SLIDE = 1024 * 768  # ui/window/slides.SLIDE_SIZE


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "tiny.safetensors"
    assert main(["init", *TINY, "--seed", "5", "--out", str(path)]) == 0
    return path


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")


def test_a_gif_whose_frames_cannot_fit_is_refused_before_the_first(ckpt, tmp_path, capsys, monkeypatch, qapp):
    pytest.importorskip("PIL")
    from attnlab.ui.window import slides

    gif = tmp_path / "t.gif"
    drawn: list[object] = []
    real_image = slides.slide_image
    monkeypatch.setattr(slides, "slide_image", lambda s: drawn.append(s) or real_image(s))
    needed = drawing.gif_bytes(len(TEMPERATURES), SLIDE)
    assert needed > len(TEMPERATURES) * SLIDE  # every frame kept, a byte a pixel at least
    monkeypatch.setattr(output_budget, "memory_room", lambda: needed - 1)
    args = ["render", "--checkpoint", str(ckpt), "--src", "the cat", "--gif", str(gif)]
    assert main(args) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"an animated GIF of {len(TEMPERATURES)} frames needs about {output_budget.amount(needed)}" in line
    assert line.endswith("nothing was written.") and drawn == [] and not list(tmp_path.iterdir())
    monkeypatch.setattr(output_budget, "memory_room", lambda: needed)
    assert main(args) == 0 and len(drawn) == len(TEMPERATURES) and gif.exists()


def test_a_gif_of_unknown_length_counts_each_frame(tmp_path, monkeypatch):
    monkeypatch.setattr(output_budget, "memory_room", lambda: drawing.gif_bytes(1, SLIDE))
    frames = drawing.counted_frames(iter("abc"), SLIDE, None)
    assert list(frames) == ["a", "b", "c"]  # each one more fits
    monkeypatch.setattr(output_budget, "memory_room", lambda: drawing.gif_bytes(1, SLIDE) - 1)
    with pytest.raises(ValueError, match=r"^frame 1 of the animated GIF needs about .* of memory, but only"):
        next(drawing.counted_frames(iter("abc"), SLIDE, None))


def test_a_picture_too_big_for_the_memory_is_refused_before_the_folder_is_made(ckpt, tmp_path, capsys, monkeypatch):
    out = tmp_path / "handout"
    monkeypatch.setattr(output_budget, "memory_room", lambda: 1_000_000)  # 1 MB
    args = ["render", "--checkpoint", str(ckpt), "--src", "the cat", "--stage", "all", "--out", str(out)]
    assert main([*args, "--scale", "4"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    w, h = (4 * n for n in (1000, 640))  # ui/window/export.RENDER_SIZE at scale 4
    assert f"a picture of {w} × {h} pixels needs about" in line and "but only 1 MB is available" in line
    assert not out.exists()
