"""Opening models attnlab did not write: File → Open model… (the Hugging Face cache: cached_models.py), File →
Open folder…, File → Model info…, and the dialog that asks for what a bare nn.Transformer state dict cannot
say (heads, norm placement, activation, tokenizer).

main_window.py only calls `add_file_actions(window, menu)`; window_files.py opens a file with `file_job(path)`
on the worker and comes back through `ask_settings` for a bare state dict. Nothing here reads a file on the GUI
thread: what a file is (additive, bare, anything else) is found out by the job, on the worker (issue 27)."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from attnlab.present.model_info import model_info_html

if TYPE_CHECKING:
    from attnlab.present.engine_api import LiveModel
    from attnlab.session import LoadDetour
    from attnlab.ui.window.window_host import WindowHost

FILE_FILTER = "Checkpoints (*.safetensors *.gguf *.pt *.pth *.bin *.ckpt config.json);;All files (*)"


class ImportSettingsDialog(QDialog):
    """The settings of a bare nn.Transformer state dict, with nn.Transformer's defaults filled in."""

    def __init__(self, path: str, probe: dict, parent: QWidget | None = None):
        from attnlab.checkpoints.bare import default_heads

        super().__init__(parent)
        self.setWindowTitle("Open a bare nn.Transformer state dict")
        d = probe["d_model"]
        enc, dec = probe["layers"]
        intro = QLabel(
            f"<b>{html.escape(Path(path).name)}</b> holds nn.Transformer weights ({probe['arch']}, "
            f"d_model {d}, {enc} encoder + {dec} decoder layers) but no settings. The weights "
            "cannot say the values below; nn.Transformer's defaults are filled in. The run will "
            "say which values were assumed.",
            wordWrap=True,
        )
        self.heads = QComboBox()
        self.heads.setObjectName("importHeads")
        self.heads.addItems([str(h) for h in heads_offered(d)])
        self.heads.setCurrentText(str(default_heads(d)))
        self.norm = QComboBox()
        self.norm.setObjectName("importNorm")
        self.norm.addItems(["post", "pre"])
        self.activation = QComboBox()
        self.activation.setObjectName("importActivation")
        self.activation.addItems(["relu", "gelu"])
        self.tokenizer_path = QLineEdit(placeholderText="none: built-in word list")
        self.tokenizer_path.setObjectName("importTokenizer")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.tokenizer_path, 1)
        row.addWidget(browse)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Attention heads", self.heads)
        form.addRow("LayerNorm placement", self.norm)
        form.addRow("FFN activation", self.activation)
        form.addRow("Tokenizer (optional)", row)
        box = QVBoxLayout(self)
        box.addWidget(intro)
        box.addLayout(form)
        box.addWidget(buttons)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "A tokenizer.json", "", "tokenizer.json (*.json)")
        if path:
            self.tokenizer_path.setText(path)

    def settings(self) -> dict:
        return {
            "heads": int(self.heads.currentText()),
            "norm": self.norm.currentText(),
            "activation": self.activation.currentText(),
            "tokenizer": self.tokenizer_path.text().strip() or None,
        }


MAX_HEADS_OFFERED = 64


def heads_offered(d_model: int) -> list[int]:
    """The head counts the settings dialog offers: divisors of d_model up to 64 (64 tries, whatever d_model)."""
    return [h for h in range(1, MAX_HEADS_OFFERED + 1) if d_model % h == 0]


def file_job(path: str, settings: dict | None = None) -> Callable[[], LiveModel | LoadDetour]:
    """A zero-argument job for the session's worker that opens `path`: the model, or a LoadDetour when the
    file is an additive-attention model (its own window) or a bare state dict and no `settings` were given
    (the GUI asks for them, then runs `file_job(path, settings)`)."""

    def load() -> LiveModel | LoadDetour:
        from attnlab.checkpoints import load_checkpoint
        from attnlab.checkpoints.additive import is_additive_file, load_additive
        from attnlab.checkpoints.torch_files import probe_bare_state_dict
        from attnlab.session import LoadDetour

        if settings is None:
            if is_additive_file(path):
                return LoadDetour("additive", load_additive(path), path)
            probe = probe_bare_state_dict(path)  # validates the tensors' layout before touching them
            if probe is not None:
                return LoadDetour("settings", probe, path)
        return load_checkpoint(path, **(settings or {}))

    return load


def ask_settings(window: WindowHost, path: str, probe: dict) -> dict | None:
    """The settings of the bare state dict at `path` (the dialog), or None when the user cancelled."""
    dialog = ImportSettingsDialog(path, probe, window)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return dialog.settings()


def open_folder_dialog(window: WindowHost) -> None:
    folder = QFileDialog.getExistingDirectory(window, "Open a model folder (Hugging Face, nanoGPT)")
    if folder:
        window.open_checkpoint(folder)


# ---- File → Model info (the page: present/model_info.py) ---------------------------------------------
def show_model_info(window: WindowHost) -> None:
    model = window.session.model
    dialog = QDialog(window)
    dialog.setObjectName("modelInfoDialog")
    dialog.setWindowTitle("Model info")
    view = QTextBrowser()
    view.setObjectName("modelInfo")
    view.setHtml(model_info_html(model) if model is not None else "<p>No model is open.</p>")
    box = QVBoxLayout(dialog)
    box.addWidget(view)
    close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    close.rejected.connect(dialog.reject)
    box.addWidget(close)
    dialog.resize(640, 560)
    dialog.show()
    window._model_info_dialog = dialog  # kept alive while open


def add_file_actions(window: WindowHost, menu: QMenu) -> None:
    """File → Open model… (the Hugging Face cache), Open folder… and Model info…"""
    from attnlab.ui.window.cached_models import show_cached_models

    window._action(menu, "Open &model…", lambda: show_cached_models(window), [], "openCachedModelAction")
    window._action(menu, "Open &folder…", lambda: open_folder_dialog(window), ["Ctrl+Shift+O"], "openFolderAction")
    window._action(menu, "Model &info…", lambda: show_model_info(window), ["Ctrl+I"], "modelInfoAction")
