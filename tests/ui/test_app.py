"""The desktop app, driven as a person would: launch, type, step with the keyboard, flip every toggle and
check that what the panel shows changed as it must, generate, open good and bad checkpoints, survive
errors."""

import dataclasses
import os
import sys
import threading

import numpy as np
import pytest
import torch
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QDialog, QDialogButtonBox, QMessageBox

import attnlab.checkpoints as checkpoints
from attnlab.commands import app as app_command
from attnlab.present.texts import EXAMPLE_SENTENCE
from attnlab.ui.stages import panel_class_for
from attnlab.ui.window import app as appsettings
from attnlab.ui.window.main_window import RANDOM_BANNER, MainWindow

WAIT = 15000


pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.fixture
def win(open_window, generating_model):
    return open_window(generating_model())


def retrace(qtbot, w, action):
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        action()
    qtbot.waitUntil(lambda: not w.session.busy, timeout=WAIT)
    return w.session.trace


def go(w, key):
    w.session.set_stage(key)
    assert w.session.stage_key == key
    return w.current_panel()


def choose(combo, data):
    """Pick the item holding `data` as a person would (activated is the 'user chose' signal)."""
    i = combo.findData(data)
    assert i >= 0, data
    combo.setCurrentIndex(i)
    combo.activated.emit(i)


def shown(w):
    return w.current_panel().shown_data()


# ---- launch ---------------------------------------------------------------------------------------------
def test_attnlab_command_opens_bundled_model_with_example_traced(qtbot, monkeypatch, generating_model):
    monkeypatch.setattr(checkpoints, "load_bundled", lambda name="translation": generating_model())
    seen = {}

    def fake_exec():  # instead of blocking in the event loop: wait for the first trace, look, close
        w = next(x for x in QApplication.topLevelWidgets() if isinstance(x, MainWindow) and x.isVisible())
        qtbot.waitUntil(lambda: w.session.trace is not None, timeout=WAIT)
        seen.update(
            src=w.session.src,
            tgt=w.session.tgt,
            stage=w.session.stage_key,
            visible=w.isVisible(),
            panel=type(w.current_panel()),
            tree=w.navigator.current_key(),
            size=(w.width(), w.height()),
        )
        w.close()
        w.deleteLater()
        return 0

    monkeypatch.setattr(QApplication, "exec", lambda self: fake_exec())
    parser = __import__("argparse").ArgumentParser()
    app_command.add_arguments(parser)
    assert app_command.run(parser.parse_args([])) == 0
    assert seen["src"] == EXAMPLE_SENTENCE and seen["tgt"] and seen["visible"]
    assert seen["stage"] == "src.tokens" == seen["tree"] and seen["panel"] is panel_class_for("tokens")
    screen = QApplication.primaryScreen().availableGeometry()
    # the default size fits the screen's available area (a frame included): 1400×900, or 92 % of a smaller one
    from attnlab.ui.window.main_window import default_size

    assert seen["size"][1] == default_size(screen)[1] <= screen.height()
    assert seen["size"][0] >= default_size(screen)[0]  # or the docks' minimum width, on an 800-pixel screen

    seen.clear()
    args = parser.parse_args(["--src", "dog bites man", "--stage", "enc.1.self.weights", "--tgt", "le"])
    assert app_command.run(args) == 0
    assert seen["src"] == "dog bites man" and seen["tgt"] == "le" and seen["stage"] == "enc.1.self.weights"
    assert seen["panel"] is panel_class_for("weights")


def test_window_shows_before_the_model_arrives(qtbot, generating_model):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    assert w.session.model is None and w.current_panel() is w.placeholder
    with qtbot.waitSignal(w.session.traceReady, timeout=WAIT):
        w.start(lambda: generating_model(), src="the cat")
    assert w.session.src == "the cat" and w.current_panel() is not w.placeholder
    assert not w.busy.isVisible()
    w.session.shutdown()


# ---- typing and stepping --------------------------------------------------------------------------------
def test_typing_a_sentence_retraces(qtbot, win):
    edit = win.findChild(type(win.inputs.src), "srcEdit")
    edit.clear()
    with qtbot.waitSignal(win.session.traceReady, timeout=WAIT):
        qtbot.keyClicks(edit, "dog bites man")
    assert win.session.trace["src.tokens"] == ["dog", "bites", "man", "</s>"]
    assert shown(win)["tokens"] == ["dog", "bites", "man", "</s>"]


def test_right_key_steps_through_every_stage(qtbot, win):
    tree = win.navigator
    keys = [s.key for s in win.session.stages]
    assert tree.keys() == keys and len(keys) > 60
    tree.setFocus()
    for i, stage in enumerate(win.session.stages):
        if i:
            qtbot.keyClick(tree, Qt.Key.Key_Right)
        assert win.session.stage_key == stage.key and tree.current_key() == stage.key
        assert isinstance(win.current_panel(), panel_class_for(stage.kind))
        assert win.schematic.current == stage.schematic_box
        assert stage.title in win.stage_title.text() and f"({stage.key})" in win.stage_title.text()
    qtbot.keyClick(tree, Qt.Key.Key_Right)  # stays on the last
    assert win.session.stage_key == keys[-1]
    qtbot.keyClick(tree, Qt.Key.Key_Left)
    assert win.session.stage_key == keys[-2]
    qtbot.keyClick(tree, Qt.Key.Key_Home)
    assert win.session.stage_key == keys[0]
    qtbot.keyClick(tree, Qt.Key.Key_PageDown)
    assert win.session.stage_key == keys[1]
    qtbot.keyClick(tree, Qt.Key.Key_End)
    assert win.session.stage_key == keys[-1]
    qtbot.keyClick(tree, Qt.Key.Key_PageUp)
    assert win.session.stage_key == keys[-2]


def test_schematic_click_jumps_to_the_box_and_the_selection_survives_retraces(qtbot, win):
    win.schematic.resize(300, 420)
    rect = win.schematic.box_rect("enc.0.ffn")
    qtbot.mouseClick(win.schematic, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())
    assert win.session.stage_key == "enc.0.ffn"
    go(win, "dec.1.cross.weights")
    retrace(qtbot, win, lambda: win.controls.scale.setChecked(False))
    assert win.session.stage_key == "dec.1.cross.weights" == win.navigator.current_key()
    assert win.schematic.current == "dec.1.cross"


# ---- toggles --------------------------------------------------------------------------------------------
def test_post_to_pre_norm_changes_the_norm_outputs(qtbot, win):
    go(win, "enc.0.norm1")
    before = shown(win)["after"]["matrix"].copy()
    trace = retrace(qtbot, win, lambda: choose(win.controls.norm, "pre"))
    assert trace.options.norm == "pre" and trace.options.norm_first
    after = shown(win)["after"]["matrix"]
    assert after.shape == before.shape and not np.allclose(after, before, atol=1e-4)
    # pre-norm: norm1 reads the layer input; post-norm: it reads the residual sum
    assert torch.allclose(trace["enc.0.norm1.in"], trace["src.input"], atol=1e-6)
    assert win.schematic.options.norm == "pre" and "Pre-norm" in win.schematic.texts[0][1]


def test_four_to_eight_heads_changes_the_head_grid(qtbot, win):
    go(win, "enc.0.self.heads")
    assert shown(win)["n_heads"] == 4
    retrace(qtbot, win, lambda: choose(win.controls.heads, 8))
    data = shown(win)
    assert data["n_heads"] == 8 and data["weights"].shape[0] == 8
    assert win.controls.head.maximum() == 8 and win.controls.head.suffix() == " of 8"  # counted from 1


def test_causal_mask_off_fills_the_decoder_upper_triangle(qtbot, win):
    go(win, "dec.0.self.weights")
    upper = np.triu(np.ones_like(shown(win)["matrix"], dtype=bool), 1)
    assert np.all(shown(win)["matrix"][upper] == 0)
    retrace(qtbot, win, lambda: win.controls.causal.setChecked(False))
    assert np.all(shown(win)["matrix"][upper] > 0)


def test_encoder_causal_mask_on_empties_the_encoder_upper_triangle(qtbot, win):
    go(win, "enc.1.self.weights")
    upper = np.triu(np.ones_like(shown(win)["matrix"], dtype=bool), 1)
    assert np.all(shown(win)["matrix"][upper] > 0)
    retrace(qtbot, win, lambda: win.controls.enc_causal.setChecked(True))
    assert np.all(shown(win)["matrix"][upper] == 0)


def test_scaling_off_sharpens_the_softmax(qtbot, win):
    go(win, "enc.0.self.weights")
    before = win.session.trace["enc.0.self.weights"].numpy()
    retrace(qtbot, win, lambda: win.controls.scale.setChecked(False))
    after = win.session.trace["enc.0.self.weights"].numpy()
    assert np.all(after.max(-1) >= before.max(-1) - 1e-6) and after.max(-1).mean() > before.max(-1).mean()

    def entropy(w):
        return -(w * np.log(w + 1e-12)).sum(-1).mean()

    assert entropy(after) < entropy(before)
    assert np.allclose(shown(win)["matrix"], after[win.session.view.head])


def test_positional_encoding_off_makes_permuted_sentences_encode_alike(qtbot, win):
    def encodings(text):
        trace = retrace(qtbot, win, lambda: win.session.set_src(text, debounce=False))
        rows = {tok: trace["enc.out"][i] for i, tok in enumerate(trace["src.tokens"])}
        return rows

    a, b = encodings("dog bites man"), encodings("man bites dog")
    assert not torch.allclose(a["dog"], b["dog"], atol=1e-4)  # with positions: order matters
    retrace(qtbot, win, lambda: win.controls.positional.setChecked(False))
    # the positional stage stays (the stage numbers do not move) and says the encoding is switched off
    assert "src.pos" not in win.session.trace and "src.pos" in win.navigator.keys()
    go(win, "src.pos")
    assert "switched off" in shown(win)["message"]
    a, b = encodings("dog bites man"), encodings("man bites dog")
    assert set(a) == set(b)
    for tok in a:
        assert torch.allclose(a[tok], b[tok], atol=1e-5), tok


def test_residual_off_passes_only_the_sublayer_output(qtbot, win):
    go(win, "enc.0.norm1")
    trace = win.session.trace
    assert not torch.allclose(trace["enc.0.resid1"], trace["enc.0.self.out"])
    assert not shown(win)["residual_off"]
    trace = retrace(qtbot, win, lambda: win.controls.residual.setChecked(False))
    assert torch.allclose(trace["enc.0.resid1"], trace["enc.0.self.out"], atol=1e-6)
    assert shown(win)["residual_off"]


def test_temperature_changes_the_probabilities(qtbot, win):
    go(win, "out.probs")
    top_before = shown(win)["values"][0]
    best = int(win.session.trace["probs"][-1].argmax())
    assert shown(win)["labels"][0] == win.session.model.tgt_tokenizer.id_to_token(best)  # words, not ids
    trace = retrace(qtbot, win, lambda: win.controls.temperature.setValue(3.0))
    assert win.session.options.temperature == 3.0
    assert torch.allclose(trace["probs"], torch.softmax(trace["logits"] / 3.0, -1), atol=1e-6)
    assert shown(win)["values"][0] < top_before
    assert win.controls.temperature_slider.value() == 300


def test_padding_mask_and_pad_to(qtbot, win):
    go(win, "enc.0.self.weights")
    trace = retrace(qtbot, win, lambda: win.controls.pad_to.setValue(10))
    n = trace["src.tokens"].index("<pad>")
    assert len(trace["src.tokens"]) == 10 and np.all(shown(win)["matrix"][:, n:] == 0)
    trace = retrace(qtbot, win, lambda: win.controls.padding.setChecked(False))
    assert np.all(shown(win)["matrix"][:, n:] > 0)


def test_clicking_a_mask_cell_blocks_it_and_clear_unblocks(qtbot, win):
    panel = go(win, "enc.0.self.mask")
    assert not win.controls.clear_mask.isEnabled()
    trace = retrace(qtbot, win, lambda: panel.maskCellToggled.emit("enc.0.self", 0, 2))
    assert trace["enc.0.self.mask"][0, 2] == float("-inf")
    assert torch.all(trace["enc.0.self.weights"][:, 0, 2] == 0) and shown(win)["blocked"][0, 2]
    assert win.controls.clear_mask.isEnabled() and "1 cell" in win.controls.mask_info.text()
    trace = retrace(qtbot, win, lambda: qtbot.mouseClick(win.controls.clear_mask, Qt.MouseButton.LeftButton))
    assert torch.all(trace["enc.0.self.weights"][:, 0, 2] > 0) and win.session.options.custom_masks == ()


def test_head_selection_from_spin_and_from_the_grid(qtbot, win):
    panel = go(win, "enc.0.self.heads")
    panel.headSelected.emit(2)
    # people count heads from 1: trace head 2 is "head 3 of 4"
    assert win.session.view.head == 2 and win.controls.head.text() == "head 3 of 4"
    go(win, "enc.0.self.weights")
    win.controls.head.setValue(4)
    assert win.session.view.head == 3 and shown(win)["head"] == 3
    assert np.allclose(shown(win)["matrix"], win.session.trace["enc.0.self.weights"][3].numpy())


def test_view_choices_redraw_without_recomputing(qtbot, win):
    trace = win.session.trace
    go(win, "enc.0.self.weights")
    win.controls.colormap.setCurrentText("magma")
    assert win.session.view.colormap == "magma" and win.session.trace is trace
    device = win.controls.device
    assert device.currentData() == "cpu"
    assert device.model().item(device.findData("cuda")).isEnabled() == torch.cuda.is_available()


def test_reset_puts_every_toggle_back(qtbot, win):
    retrace(qtbot, win, lambda: win.controls.scale.setChecked(False))
    retrace(qtbot, win, lambda: win.controls.reset.click())
    assert win.session.options == type(win.session.options)() and win.controls.scale.isChecked()


def test_a_toggle_rereads_only_the_controls_of_the_fields_it_changed(qtbot, win, monkeypatch):
    reads = []

    def counted(row):
        return dataclasses.replace(row, read=lambda p, s, c: (reads.append(row.widgets), row.read(p, s, c)))

    monkeypatch.setattr(win.controls, "rows", tuple(counted(row) for row in win.controls.rows))
    retrace(qtbot, win, lambda: win.controls.scale.setChecked(False))
    assert reads == [("scale",)]  # once, and no other row (the trace's arrival re-reads nothing)
    reads.clear()
    retrace(qtbot, win, lambda: choose(win.controls.heads, 8))
    assert sorted(reads) == [("head",), ("heads",)]  # the head spin's range follows the head count
    assert win.controls.head.maximum() == 8 and win.controls.scale.isChecked() is False


def test_impossible_toggle_is_refused_and_the_controls_snap_back(qtbot, win):
    with qtbot.waitSignal(win.session.failed, timeout=WAIT):
        win.session.update_options(n_heads=5)
    assert win.controls.heads.currentData() == 4 and "Not run" in win.statusBar().currentMessage()


def test_latest_request_wins_in_the_window(qtbot, win):
    go(win, "out.probs")
    seen = []
    win.session.traceReady.connect(seen.append)
    for i in range(20):
        win.controls.temperature.setValue(1.0 + 0.1 * (i + 1))
    qtbot.waitUntil(lambda: bool(seen) and not win.session.busy, timeout=WAIT)
    qtbot.wait(100)
    assert len(seen) == 1 and win.session.options.temperature == 3.0
    probs = torch.softmax(seen[0]["logits"][-1] / 3.0, -1).numpy()
    assert np.isclose(shown(win)["values"][0], probs.max(), atol=1e-6)


# ---- generation -----------------------------------------------------------------------------------------
def test_generate_button_adds_one_token_and_one_row_per_press(qtbot, win):
    go(win, "dec.0.self.weights")
    rows = shown(win)["matrix"].shape[0]
    for press in range(1, 3):
        expected = win.session.model.next_token(win.session.trace)[1]
        retrace(qtbot, win, lambda: qtbot.mouseClick(win.inputs.generate, Qt.MouseButton.LeftButton))
        assert shown(win)["matrix"].shape == (rows + press, rows + press)
        assert win.session.trace["tgt.tokens"][-1] == expected
        assert win.inputs.tgt.text().split()[-1] == expected
    retrace(qtbot, win, lambda: qtbot.mouseClick(win.inputs.clear, Qt.MouseButton.LeftButton))
    assert win.session.trace["tgt.tokens"] == ["<s>"] and win.inputs.tgt.text() == ""


def test_inputs_follow_the_architecture(qtbot, win, generating_model):
    retrace(qtbot, win, lambda: win.session.set_model(generating_model("decoder-only"), "the cat"))
    assert not win.inputs.tgt.isVisible() and win.inputs.generate.isVisible()
    assert win.inputs.src_label.text() == "&Prompt:"
    retrace(qtbot, win, lambda: win.session.set_model(generating_model("encoder-only"), "the cat"))
    assert not win.inputs.tgt.isVisible() and not win.inputs.generate.isVisible()
    assert not win.controls.causal.isEnabled() and win.controls.enc_causal.isEnabled()


# ---- checkpoints ----------------------------------------------------------------------------------------
def test_open_a_good_checkpoint_then_a_bad_one(qtbot, win, tmp_path, monkeypatch, generating_model):
    good = tmp_path / "tiny.safetensors"
    saved = generating_model(seed=5)
    saved.name = "tiny-saved"
    checkpoints.save_checkpoint(saved, good)
    retrace(qtbot, win, lambda: win.open_checkpoint(str(good)))
    opened = win.session.model
    assert opened.name == "tiny-saved" and "tiny-saved" in win.windowTitle()
    assert appsettings.recent_files(win.settings)[0] == str(good.resolve())

    bad = tmp_path / "garbage.safetensors"
    bad.write_bytes(b"\x00\x01 this is not a checkpoint" * 10)
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a[2]))
    with qtbot.waitSignal(win.session.modelFailed, timeout=WAIT):
        win.open_checkpoint(str(bad))
    assert len(warnings) == 1 and "garbage.safetensors" in warnings[0]
    assert win.session.model is opened and win.session.trace is not None
    assert win.statusBar().currentMessage() == "Could not open garbage.safetensors — still showing tiny-saved"
    assert appsettings.recent_files(win.settings) == [str(good.resolve())]


def test_dropping_a_file_opens_it(qtbot, win, tmp_path, generating_model):
    path = tmp_path / "dropped.safetensors"
    checkpoints.save_checkpoint(generating_model(seed=7), path)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(
        QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    with qtbot.waitSignal(win.session.modelChanged, timeout=WAIT):
        win.dropEvent(event)
    assert win.session.model_path == str(path)


def test_recent_files_are_capped_and_pruned(tmp_path, win):
    paths = []
    for i in range(10):
        p = tmp_path / f"m{i}.safetensors"
        p.write_bytes(b"x")
        paths.append(str(p.resolve()))
        appsettings.add_recent_file(win.settings, str(p))
    assert appsettings.recent_files(win.settings) == paths[::-1][:8]
    os.remove(paths[-1])
    assert appsettings.recent_files(win.settings) == paths[::-1][1:8]


def test_new_random_model_shows_the_banner(qtbot, win, monkeypatch):
    from attnlab.ui.window.random_dialog import RandomModelDialog

    dialog = RandomModelDialog()
    dialog.n_heads.setValue(5)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert "divisible" in dialog.problem.text() and not ok.isEnabled()
    dialog.n_heads.setValue(4)
    assert ok.isEnabled() and dialog.problem.text() == ""

    def choose_small(self):
        self.d_model.setValue(32)
        self.n_heads.setValue(2)
        self.layers.setValue(1)
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(RandomModelDialog, "exec", choose_small)
    assert not win.banner.isVisible()
    retrace(qtbot, win, win.new_random_model)
    model = win.session.model
    assert model.metadata.get("random") and model.config.d_model == 32 and model.config.n_heads == 2
    assert win.banner.isVisible() and RANDOM_BANNER in win.banner.text()


# ---- robustness and settings ----------------------------------------------------------------------------
@pytest.mark.qt_no_exception_capture
def test_uncaught_errors_become_a_message_not_a_crash(qtbot, win):
    win.errors.install()
    try:
        raise ValueError("a bug in a slot")
    except ValueError:
        sys.excepthook(*sys.exc_info())
    qtbot.waitUntil(lambda: win.errors.box is not None and win.errors.box.isVisible(), timeout=WAIT)
    box = win.errors.box
    assert "ValueError: a bug in a slot" in box.informativeText() and "Traceback" in box.detailedText()
    assert not box.isModal()

    def worker():
        raise RuntimeError("a bug on a thread")

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    qtbot.waitUntil(lambda: "RuntimeError: a bug on a thread" in win.errors.history, timeout=WAIT)
    assert "2 errors" in box.informativeText()
    retrace(qtbot, win, lambda: win.controls.scale.setChecked(False))  # still alive and working
    win.errors.uninstall()
    assert sys.excepthook is not win.errors.excepthook


def test_theme_and_layout_are_remembered(qtbot, win):
    win.dark_action.setChecked(True)
    assert QApplication.instance().palette().window().color().lightness() < 100
    go(win, "enc.0.self.weights")
    assert shown(win)["matrix"].shape[0] == len(win.session.trace["src.tokens"])  # panels rebuilt, drawing
    win.schematic_dock.close()  # a layout change
    win.close()
    settings = appsettings.make_settings()
    assert appsettings.read_bool(settings, appsettings.DARK)
    assert settings.value(appsettings.LAST_SENTENCE) == "the black cat sees the dog"
    assert settings.value(appsettings.LAST_SENTENCE_MODEL) == win.session.model.name
    again = MainWindow()
    qtbot.addWidget(again)
    again.show()
    assert again.dark_action.isChecked() and settings.value(appsettings.GEOMETRY) is not None
    assert again.nav_dock.isVisible() and not again.schematic_dock.isVisible()
    win.dark_action.setChecked(False)
    again.session.shutdown()


def test_keyboard_help_lists_the_shortcuts(qtbot, win, monkeypatch):
    texts = []
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: texts.append(a[2]))
    win.show_shortcuts()
    assert "PgDn" in texts[0] and "Ctrl+G" in texts[0]
