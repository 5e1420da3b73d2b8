"""The main window's status bar (device, timings, token counts, notices, busy) and the banner above the
stage that says when the numbers mean nothing (a mixin of MainWindow)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QMessageBox, QProgressBar, QPushButton

from attnlab.present.decoder_input import written_for_banner
from attnlab.present.facts import untrained_banner
from attnlab.present.lexicon import out_of_domain_text
from attnlab.present.training_steps import step_banner
from attnlab.present.window_facts import device_text, input_cut_notices, token_counts, unknown_tokens
from attnlab.ui.window.steady import FixedSizeLabel, SteadyBox

if TYPE_CHECKING:
    from attnlab.present.engine_api import LiveModel, Trace
    from attnlab.ui.window.window_host import WindowHost
else:
    WindowHost = object  # the type checker's view of MainWindow (window_host.py)

RANDOM_BANNER = "Randomly initialised model — attention is noise: nothing here was learned."
CLASSROOM_NOTE = (
    "Classroom model ({what}), trained on short generated sentences with a small vocabulary: "
    "other sentences still run, but then its outputs are meaningless."
)
CANCEL_AFTER_MS = 1000  # a run still going after this long gets the Cancel button (a load gets it at once)
WIDEST_TIMING = "compute 8888.8 ms · paint 8888.8 ms"


def classroom_description(name: str) -> str:
    """'translation' -> 'English → French translation, encoder-decoder'."""
    from attnlab.checkpoints import BUNDLED

    text = BUNDLED.get(str(name), str(name)).replace("->", "→")
    return text.replace(" (", ", ").rstrip(")")


def failed_open_text(what: str, model: LiveModel | None) -> str:
    """'Could not open x.safetensors — still showing translation' for the status bar after a failed open."""
    name = Path(what).name if what and not what.startswith("the bundled") else (what or "the model")
    still = f"still showing {model.name}" if model is not None else "no model is open"
    return f"Could not open {name} — {still}"


class WindowStatus(WindowHost):
    """Builds the status bar widgets and the banner, and fills them from a trace."""

    last_paint_ms = 0.0

    def _build_status_bar(self) -> None:
        self.banner = QLabel(wordWrap=True)
        self.banner.setObjectName("banner")
        # a line more or less does not resize the stage below, and a new text lays out nothing (steady.py)
        self.banner_box = SteadyBox(self.banner)
        self.banner_box.setVisible(False)
        self.device_label = QLabel()
        self.device_label.setObjectName("deviceLabel")
        # a fixed size, room for the widest timing: a label that may grow and shrink with its digits relays
        # out and repaints the whole status bar on every toggle
        self.timing_label = FixedSizeLabel(WIDEST_TIMING, "timingLabel")
        self.tokens_label = QLabel()
        self.tokens_label.setObjectName("tokensLabel")
        self.notice_label = QLabel()
        self.notice_label.setObjectName("noticeLabel")
        self.busy = QProgressBar(minimum=0, maximum=0, textVisible=False)
        self.busy.setObjectName("busyIndicator")
        self.busy.setMaximumWidth(120)
        self.busy.setVisible(False)
        bar = self.statusBar()
        for w in (self.device_label, self.timing_label, self.tokens_label):
            bar.addPermanentWidget(w)
        bar.addWidget(self.notice_label, 1)
        bar.addPermanentWidget(self.busy)
        # opening a file runs on the worker and may take long (a huge or hostile file): it can be cancelled
        self.cancel_load_button = QPushButton("Cancel")
        self.cancel_load_button.setObjectName("cancelLoadButton")
        self.cancel_load_button.setVisible(False)
        self.cancel_load_button.setToolTip("Stop opening this model and keep the one shown")
        self.cancel_load_button.clicked.connect(self._cancel_load)
        bar.addPermanentWidget(self.cancel_load_button)

    def _show_status(self, trace: Trace) -> None:
        info = trace.info
        counts = token_counts(trace)
        notices = list(trace.notices)
        model = self.session.model
        spread = model.metadata.get("placement") if model is not None else None  # layers over GPU, host, disk
        device = device_text(trace, bool(spread))
        tip = f"Where the weights live: {spread}" if spread else ""
        if self.device_label.toolTip() != tip:
            self.device_label.setToolTip(tip)
        for label, text in (
            (self.device_label, device),  # precision: issue 23
            (
                self.timing_label,
                f"compute {info.get('job_ms', info.get('compute_ms', 0.0)):.1f} ms · paint {self.last_paint_ms:.1f} ms",
            ),
            (self.tokens_label, "Tokens: " + " + ".join(counts)),
            (self.notice_label, " · ".join(notices)),
        ):
            if label.text() != text:  # setText lays out the status bar even for the same text
                label.setText(text)
        if self.notice_label.toolTip() != "\n".join(notices):
            self.notice_label.setToolTip("\n".join(notices))

    def _update_banner(self, trace: Trace) -> None:
        """Say when the numbers mean nothing: a random model, a notice from the loader, unknown tokens;
        for a classroom model, a quieter note that it only knows its small training language."""
        model = self.session.model
        meta = model.metadata if model else {}
        warnings = [RANDOM_BANNER] if meta.get("random") else []
        if meta.get("notice"):
            warnings.append(str(meta["notice"]))
        if model is not None and meta.get("classroom_model") and not meta.get("random"):
            side = "src" if model.config.has_encoder else "tgt"
            typed = self.session.src if model.config.has_encoder else (self.session.tgt or self.session.src)
            read = model.typed_form(typed or "", side)  # what the model reads: "don't" is "do not"
            warnings.append(out_of_domain_text(str(meta["classroom_model"]), read))
        warnings += input_cut_notices(trace)  # an input longer than the model reads
        warnings.append(written_for_banner(trace))  # a typed decoder input beside another sentence
        untrained = untrained_banner(trace)
        if untrained and not meta.get("random"):
            warnings.append(untrained)
        unknown = unknown_tokens(trace)
        if unknown and not meta.get("random"):
            warnings.append(
                f"{unknown} token(s) are not in this model's vocabulary and became <unk>: "
                "the model has never seen them, so expect meaningless output."
            )
        warnings = [w for w in warnings if w]
        lines = warnings or (
            [CLASSROOM_NOTE.format(what=classroom_description(meta["classroom_model"]))]
            if meta.get("classroom_model")
            else []
        )
        snapshots = self.session.snapshots
        if snapshots is not None and trace.info.get("training_step") is not None:  # a snapshot's weights
            lines = [step_banner(trace.info["training_step"], snapshots.final_step), *lines]
        text, level = "\n".join(dict.fromkeys(lines)), "warning" if warnings else "info"
        if text != self.banner.text():
            self.banner.setText(text)
            self.banner_box.fit()
        if self.banner.property("level") != level:  # re-polishing restyles (and repaints) the window
            self.banner.setProperty("level", level)
            self.banner.style().unpolish(self.banner)
            self.banner.style().polish(self.banner)
        self.banner_box.setVisible(bool(lines))

    def _on_model_failed(self, message: str) -> None:
        self.statusBar().showMessage(failed_open_text(getattr(self, "opening", ""), self.session.model))
        QMessageBox.warning(self, "Could not open the model", message)

    def _offer_cancel(self) -> None:
        self.cancel_load_button.setVisible(self.session.busy)

    def _cancel_load(self) -> None:
        if self.session.cancel():
            what = getattr(self, "opening", "") or "the model"
            name = Path(what).name if not what.startswith("the bundled") else what
            model = self.session.model
            still = f"still showing {model.name}" if model is not None else "no model is open"
            self.statusBar().showMessage(f"Stopped opening {name} — {still}", 10000)

    def _on_failed(self, message: str) -> None:
        line = "Not run: " + message.replace("\n", " ")
        self.statusBar().showMessage(line, 10000)
        if self.session.trace is None:  # nothing drawn yet: the panel says why instead of "Loading…" for ever
            self.placeholder.setText(line)
            self.placeholder.setWordWrap(True)
            self.stage_title.setText("Nothing to show yet")

    def _on_streamed(self, k: int, n: int) -> None:
        """A layer of a spread-out model streams in: the busy bar counts them ("layer 3 of 10 streaming")."""
        self.busy.setRange(0, n)
        self.busy.setValue(k)
        self.busy.setFormat(f"layer {k} of {n} streaming")
        self.busy.setTextVisible(True)
        self.busy.setMaximumWidth(220)
        self.busy.setToolTip("Layers kept in the computer's memory or on disk are brought in one at a time")

    def _on_busy(self, busy: bool) -> None:
        if not busy:  # back to the plain "working" bar for the next run
            self.busy.setRange(0, 0)
            self.busy.setTextVisible(False)
            self.busy.setMaximumWidth(120)
        self.busy.setVisible(busy)
        if busy:  # a run that takes long (a slow tokenizer, a big model) can be cancelled too
            QTimer.singleShot(CANCEL_AFTER_MS, self.cancel_load_button, self._offer_cancel)
        elif not self.session.loading:
            self.cancel_load_button.setVisible(False)
