"""`attnlab render` (headless pictures + index.html handout) and File → Export (PNG at a scale, SVG, CSV, .npz)."""

import csv
import io
import re

import numpy as np
import pytest
from PySide6.QtGui import QImage

from attnlab.cli import main
from attnlab.engine import names
from attnlab.present.explain import explanation_html
from attnlab.present.export import stage_table
from attnlab.present.stages import ViewState, stages_for
from attnlab.ui.window.export import RENDER_SIZE
from attnlab.ui.window.export_actions import export_current
from attnlab.ui.window.main_window import MainWindow

TINY = ["--d-model", "16", "--heads", "4", "--d-ff", "32", "--enc-layers", "1", "--dec-layers", "2", "--max-len", "32"]
STAGES = ["src.tokens", "enc.0.self.weights", "out.probs"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "tiny.safetensors"
    assert main(["init", *TINY, "--seed", "3", "--out", str(path)]) == 0
    return path


def png_size(path):
    image = QImage(str(path))
    assert not image.isNull(), path
    return image.width(), image.height()


def test_render_named_stages_png_svg_and_handout(ckpt, tmp_path, capsys, qapp):
    out = tmp_path / "handout"
    assert (
        main(
            [
                "render",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the cat",
                "--tgt",
                "le",
                "--stage",
                STAGES[0],
                "--stage",
                ",".join(STAGES[1:]),
                "--out",
                str(out),
                "--format",
                "png,svg",
                "--scale",
                "2",
            ]
        )
        == 0
    )
    files = sorted(p.name for p in out.iterdir())
    expected = [f"{i:03d}-{k}.{f}" for i, k in enumerate(STAGES, 1) for f in ("png", "svg")]
    assert files == sorted([*expected, "index.html"])
    for name in expected[::2]:
        assert png_size(out / name) == (RENDER_SIZE[0] * 2, RENDER_SIZE[1] * 2)
    for name in expected[1::2]:
        assert (out / name).read_text(encoding="utf-8").lstrip().startswith("<?xml")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"src='([^']+)'", page) == expected[::2]  # in order, each stage's PNG shown once
    assert all(f"href='{name}'" in page for name in expected[1::2])  # its SVG linked
    from attnlab.commands.loading import load_any

    model = load_any(str(ckpt))
    trace = model.trace("the cat", "le")
    by_key = {s.key: s for s in stages_for(trace)}
    for key in STAGES:
        stage = by_key[key]
        assert stage.title in page
        first_sentence = re.sub(r"<[^>]+>", "", explanation_html(stage, trace)).split(".")[0][-40:]
        assert first_sentence and first_sentence in re.sub(r"<[^>]+>", "", page)


def test_render_scale_one_and_all(ckpt, tmp_path, qapp):
    out = tmp_path / "all"
    assert main(["render", "--checkpoint", str(ckpt), "--src", "the cat", "--stage", "all", "--out", str(out)]) == 0
    from attnlab.commands.loading import load_any

    model = load_any(str(ckpt))
    count = len(stages_for(model.trace("the cat", "")))
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == count
    assert png_size(pngs[0]) == RENDER_SIZE
    assert (out / "index.html").read_text(encoding="utf-8").count("<section") == count


def test_render_unknown_stage_exits_2_listing_valid_names(ckpt, tmp_path, capsys):
    assert (
        main(
            [
                "render",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the cat",
                "--stage",
                "enc.9.self.weights",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "'enc.9.self.weights'" in err and "enc.0.self.weights" in err and "out.probs" in err
    assert not (tmp_path / "x").exists()  # nothing written for a bad request


@pytest.mark.parametrize("bad", [["--format", "jpg"], ["--scale", "9"], ["--head", "0"]])
def test_render_bad_arguments_exit_2(ckpt, tmp_path, capsys, bad):
    assert (
        main(
            [
                "render",
                "--checkpoint",
                str(ckpt),
                "--src",
                "the cat",
                "--stage",
                "all",
                "--out",
                str(tmp_path / "y"),
                *bad,
            ]
        )
        == 2
    )
    assert "attnlab render:" in capsys.readouterr().err


def parse_csv(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], [r[0] for r in rows[1:]], np.array([[float(v) for v in r[1:]] for r in rows[1:]])


def test_stage_table_equals_the_trace(tiny_model):
    model = tiny_model()
    trace = model.trace("the black cat sees the dog", "le chat noir")
    stages = {s.key: s for s in stages_for(trace)}
    header, rows, values = parse_csv(stage_table(trace, stages["dec.1.cross.weights"], ViewState(head=2)).csv_text())
    np.testing.assert_array_equal(values, trace["dec.1.cross.weights"][2].numpy())  # [Tq, Tk] of head 3
    assert [r.split(":", 1)[1] for r in rows] == trace["tgt.tokens"]
    assert [c.split(":", 1)[1] for c in header[1:]] == trace["src.tokens"]
    _, _, ffn = parse_csv(stage_table(trace, stages["enc.1.ffn"], ViewState()).csv_text())
    np.testing.assert_array_equal(ffn, trace[names.ffn_entry("enc.1", "hidden")].numpy())
    _, _, norm = parse_csv(stage_table(trace, stages["dec.0.norm2"], ViewState()).csv_text())
    np.testing.assert_array_equal(norm, trace["dec.0.norm2.out"].numpy())


def settled_size(qtbot, widget) -> tuple[int, int]:
    """The widget's size once two looks 50 ms apart agree (at most 2 s)."""
    before = None
    for _ in range(40):
        qtbot.wait(50)
        now = (widget.width(), widget.height())
        if now == before:
            return now
        before = now
    return before


def test_window_export_menu_writes_every_format(qtbot, tmp_path, tiny_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.session.traceReady, timeout=15000):
        w.session.set_model(tiny_model(), "the black cat sees the dog", "le chat")
    for name in (
        "exportPng1Action",
        "exportPng2Action",
        "exportPng3Action",
        "exportSvgAction",
        "exportCsvAction",
        "exportNpzAction",
    ):
        assert w.findChild(type(w.dark_action), name) is not None, name
    w.session.set_stage("enc.0.self.weights")
    panel = w.current_panel()
    size = settled_size(qtbot, panel)  # the heatmap's row floor may re-lay the panel out once after its first paint
    export_current(w, "png", tmp_path / "a.png", 1)
    export_current(w, "png", tmp_path / "b.png", 3)
    assert png_size(tmp_path / "b.png") == (size[0] * 3, size[1] * 3)
    assert png_size(tmp_path / "a.png") == size
    export_current(w, "svg", tmp_path / "a.svg")
    assert "<svg" in (tmp_path / "a.svg").read_text(encoding="utf-8")
    export_current(w, "csv", tmp_path / "a.csv")
    _, _, values = parse_csv((tmp_path / "a.csv").read_text(encoding="utf-8"))
    np.testing.assert_array_equal(values, w.session.trace["enc.0.self.weights"][0].numpy())
    export_current(w, "npz", tmp_path / "run.npz")
    with np.load(tmp_path / "run.npz", allow_pickle=False) as data:
        np.testing.assert_array_equal(data["dec.1.self.weights"], w.session.trace["dec.1.self.weights"].numpy())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.png", "a.svg", "b.png", "run.npz"]
    w.session.shutdown()


def test_a_rendered_panel_shows_no_hover_hint(tiny_model, qapp):
    """A handout, a slide or a GIF frame cannot be hovered: the readouts' "Hover a cell …" lines are blank."""
    from PySide6.QtWidgets import QLabel

    from attnlab.ui.plots.head_grid import HeadGrid
    from attnlab.ui.plots.heatmap import LabeledHeatmap
    from attnlab.ui.window.export import StageRenderer

    trace = tiny_model().trace("the black cat", "le chat")
    stages = {s.key: s for s in stages_for(trace)}
    renderer = StageRenderer()
    for key in ("enc.0.self.weights", "enc.0.self.heads", "enc.0.self.qkv"):
        panel = renderer.panel(trace, stages[key], ViewState())
        texts = [label.text() for label in panel.findChildren(QLabel) if label.isVisible()]
        assert texts and not {LabeledHeatmap.HINT, HeadGrid.HINT} & set(texts), (key, texts)
