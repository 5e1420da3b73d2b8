"""Opening models in the main window: File → Open (dialog, recent, bundled, new random), drag and drop, and
the start-up load that waits for the first paint (a mixin of MainWindow)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QMimeData, QObject, Qt, QTimer
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QDialog, QFileDialog

from attnlab.model_ids import looks_like_id
from attnlab.session import LoadDetour
from attnlab.ui.window import app as appsettings
from attnlab.ui.window import open_model
from attnlab.ui.window.random_dialog import RandomModelDialog

if TYPE_CHECKING:
    from attnlab.checkpoints.additive import AdditiveModel
    from attnlab.present.engine_api import LiveModel
    from attnlab.ui.window.additive_view import AdditiveCompareWindow
    from attnlab.ui.window.window_host import WindowHost
else:
    WindowHost = object  # the type checker's view of MainWindow (window_host.py)

FIRST_PAINT_WAIT_MS = 1000
CHECKPOINT_FILTER = open_model.FILE_FILTER
HUB_HOSTS = ("huggingface.co", "hf.co")  # a model page dragged from the browser opens its id from the cache


class WindowFiles(WindowHost):
    """Every way a model gets into the window; all of them load off the GUI thread through the session."""

    additive_window: AdditiveCompareWindow

    _pending_start: Callable[[], None] | None = None  # the start-up load, run after the first paint
    opening = ""  # what the last open asked for (a path, or "the bundled … model"): named if it fails

    def open_checkpoint(self, path: str, settings: dict | None = None) -> None:
        """Open `path` on the worker (nothing is read here); an additive model comes back for its own window and
        a bare state dict for its settings (`_on_load_detour`). Cancel (status bar) keeps the open model."""
        path = str(Path(path).expanduser())
        self.statusBar().showMessage(f"Opening {path}…")
        self.opening = path
        job = open_model.file_job(path, settings)
        self.session.load_async(job, path=path, src=self.session.src or None, prefix=True)

    def _on_load_detour(self, detour: LoadDetour) -> None:
        """A file read on the worker that is not opened as the window's model (see Session.LoadDetour)."""
        if detour.kind == "additive":  # the GRU model is no Transformer: it opens in its own comparison window
            self.statusBar().clearMessage()
            self._show_additive(detour.value)
        elif detour.kind == "settings" and detour.path is not None:
            self.statusBar().clearMessage()
            settings = open_model.ask_settings(self, detour.path, detour.value)
            if settings is not None:
                self.open_checkpoint(detour.path, settings)

    def open_bundled(self, name: str) -> None:
        from attnlab.checkpoints import load_bundled

        self.opening = f"the bundled {name} model"
        self.session.load_async(lambda: load_bundled(name), prefix=True)

    def open_additive(self, path: str | None = None) -> None:
        """The additive-attention (GRU) model's alignments beside the open model's cross-attention (read on
        the worker; the bundled one without `path`)."""

        def job() -> LoadDetour:
            from attnlab.checkpoints.additive import load_additive

            return LoadDetour("additive", load_additive(path), path)

        self.opening = path or "the bundled additive-attention model"
        self.session.load_async(job)

    def _show_additive(self, additive: AdditiveModel) -> None:
        from attnlab.ui.window.additive_view import AdditiveCompareWindow

        sentence = self.session.src or "the black cat sees the small dog ."
        window = AdditiveCompareWindow(additive, self.session.model, str(sentence), self)
        window.setWindowFlag(Qt.WindowType.Window)
        window.show()
        self.additive_window = window

    def open_dialog(self) -> None:
        start = str(self.settings.value(appsettings.LAST_CHECKPOINT, "") or "")
        folder = str(Path(start).parent) if start else ""
        path, _ = QFileDialog.getOpenFileName(self, "Open a checkpoint", folder, CHECKPOINT_FILTER)
        if path:
            self.open_checkpoint(path)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        paths = appsettings.recent_files(self.settings)
        for path in paths:

            def open_recent(p: str = path) -> None:
                self.open_checkpoint(p)

            action = self.recent_menu.addAction(path if looks_like_id(path) else Path(path).name, open_recent)
            action.setToolTip(path)
        if not paths:
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    def new_random_model(self) -> None:
        from attnlab.checkpoints import random_model

        model = self.session.model
        dialog = RandomModelDialog(model.config if model else None, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            config, seed = dialog.config(), dialog.seed.value()
            self.session.load_async(lambda: random_model(config, seed), src=self.session.src or None, prefix=True)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if dropped_model(event.mimeData()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        spec = dropped_model(event.mimeData())
        if spec:
            event.acceptProposedAction()
            self.open_checkpoint(spec)

    # ---- the start-up load -------------------------------------------------------------------------------
    def start(
        self,
        loader: Callable[[], LiveModel | LoadDetour],
        src: str | None = None,
        tgt: str | None = None,
        stage: str | None = None,
        path: str | None = None,
        remembered: tuple[str, str] | None = None,
    ) -> None:
        """Once the window has painted: build the model with `loader()` off the GUI thread and trace `src`.

        Waiting for the first paint matters: importing torch on the worker holds the GIL for about a second,
        which would otherwise delay the window itself."""
        if stage:
            self.session.stage_key = stage
        self._pending_start = lambda: self.session.load_async(
            loader, path=path, src=src, tgt=tgt, prefix=tgt is None, remembered=remembered
        )
        self.installEventFilter(self)
        QTimer.singleShot(FIRST_PAINT_WAIT_MS, self._run_pending_start)  # in case no paint comes (hidden)

    def _run_pending_start(self) -> None:
        self.removeEventFilter(self)
        start, self._pending_start = self._pending_start, None
        if start is not None:
            start()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Installed by start() until the first paint of the window."""
        if watched is self and event.type() == QEvent.Type.Paint and self._pending_start is not None:
            QTimer.singleShot(0, self._run_pending_start)
        return False


def dropped_model(data: QMimeData) -> str:
    """What a drop names: a local file or folder, a model id ('org/name[@revision]' as text), or a model's
    page on huggingface.co (its id); '' for anything else."""
    urls = data.urls() if data.hasUrls() else []
    if urls and urls[0].isLocalFile():
        return urls[0].toLocalFile()
    if urls and urls[0].host() in HUB_HOSTS:
        text = "/".join(urls[0].path().strip("/").split("/")[:2])
    else:
        text = data.text().strip() if data.hasText() else ""
    return text if looks_like_id(text) else ""
