"""The toggles panel: one row per RunOptions field (and per view choice), bound two-way to the session.

control_rows.rows() makes the table (from the option table as it stands when the panel is built): each row
says how its widget is built, wired, read back and which fields re-read it.
Widgets write to the session; the session's signals write back into the widgets of the changed fields only,
with their signals blocked, so syncing never triggers another change, and never into the one control that
made the change (it already shows it): only other rows whose values or enabled state depend on the change
are re-read. A change the session refuses re-reads every changed row, the clicked one included, so it snaps
back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFormLayout,
    QGroupBox,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from attnlab.session import Session
from attnlab.ui.controls.control_host import ControlHost
from attnlab.ui.controls.control_rows import Row, rows
from attnlab.ui.window import zoom

if TYPE_CHECKING:
    from attnlab.present.engine_api import RunOptions, Trace
    from attnlab.present.stages import Stage, ViewState

ALL_FIELDS = None  # sync(ALL_FIELDS): re-read every row
PRESENT_DOCK_SHARE = 0.34  # presenting, the toggles take up to this share of the window for their whole choices


class _FromRow:
    """The session as one row's widgets see it: a call they make (update_options, set_view, ...) is marked
    as coming from that row while it runs, so the sync it causes leaves that row's widget alone."""

    def __init__(self, session: Session, row: Row, panel: ControlsPanel):
        self._session, self._row, self._panel = session, row, panel

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._session, name)
        if not callable(value) or hasattr(value, "connect"):  # state and signals: the session's own
            return value
        return self._marked(value)

    def _marked(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def from_row(*args: Any, **kwargs: Any) -> Any:
            outer = self._panel._source
            self._panel._source = (self._row, self._session.options, self._session.view)
            try:
                return call(*args, **kwargs)
            finally:
                self._panel._source = outer

        return from_row


class ControlsPanel(ControlHost):
    """Every what-if toggle of RunOptions plus the view choices (head, colour map), built from control_rows.rows().

    Widgets write to the session; the session's signals re-read only the rows whose fields changed, with those
    widgets' signals blocked, so showing a state never triggers another change.
    The widgets its rows build are declared in ControlHost (control_host.py)."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("controls")
        self.session = session
        self._view: ViewState | None = None  # the view last shown, to tell which of its fields changed
        self._stage: Stage | None = None  # the stage last shown; a trace can pick one (`--stage`, a lesson step)
        # (row, options, view before its call) while a row's own widget is changing the session
        self._source: tuple[Row, RunOptions, ViewState] | None = None
        # fit_presenting: (least width, combos' policies, dock width) of the window's narrow dock, while presenting
        self._narrow: tuple[int, list[QComboBox.SizeAdjustPolicy], int] | None = None
        self.rows = rows()
        layout = QVBoxLayout(self)
        forms: dict[str, QFormLayout] = {}
        for row in self.rows:
            if row.group not in forms:
                group = QGroupBox(row.group)
                forms[row.group] = QFormLayout(group)
                layout.addWidget(group)
            item = row.build(self)
            if row.label is None:
                forms[row.group].addRow(item)
            else:
                forms[row.group].addRow(row.label, item)
            row.connect(self, _FromRow(session, row, self))  # type: ignore[arg-type]  # a Session to the row
        self.reset = QPushButton("Reset all toggles")
        self.reset.setObjectName("resetOptionsButton")
        self.reset.clicked.connect(session.reset_options)
        layout.addWidget(self.reset)
        layout.addStretch(1)
        session.modelChanged.connect(lambda _m: self.sync(ALL_FIELDS))
        session.optionsChanged.connect(lambda _o, changed: self.sync(changed))
        session.viewChanged.connect(self._on_view)
        session.stageChanged.connect(lambda _key: self.sync(frozenset({"stage"})))
        session.traceReady.connect(self._on_trace)
        session.pinnedChanged.connect(lambda _trace: self.sync(frozenset({"pinned"})))
        self.sync(ALL_FIELDS)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self, self.fit_presenting)  # after the dock (T, or leaving presentation) is laid out

    def fit_presenting(self) -> None:
        """Presenting (large text; T brings this dock back), the dock is as wide as its widest row: no choice
        elided, no sideways scroll bar (issue 32), as far as the centre keeps its least width (at 150 % it may
        not: then the dock scrolls sideways rather than widen the window past its screen). Otherwise the
        window's narrow dock comes back (rows wrap and long choices elide, so the window fits a 1024-px screen:
        main_window)."""
        scroll = self.parentWidget()
        while scroll is not None and not isinstance(scroll, QScrollArea):
            scroll = scroll.parentWidget()
        if scroll is None:
            return
        kept = self._narrow
        combos = self.findChildren(QComboBox)
        dock = scroll.parentWidget()
        while dock is not None and not isinstance(dock, QDockWidget):
            dock = dock.parentWidget()
        if zoom.presenting():
            if kept is None:
                width = dock.width() if dock is not None else scroll.width()
                kept = self._narrow = (scroll.minimumWidth(), [c.sizeAdjustPolicy() for c in combos], width)
            for combo in combos:
                combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            self.adjustSize()
            around = scroll.verticalScrollBar().sizeHint().width() + 2 * scroll.frameWidth()
            window = self.window()
            room = int(PRESENT_DOCK_SHARE * window.width())  # the plots keep the rest of the window
            want = max(self.minimumSizeHint().width(), min(self.sizeHint().width(), room)) + around
            central = window.centralWidget() if isinstance(window, QMainWindow) else None
            # never wider than leaves the centre its least width: the window must not grow past its screen
            most = window.width() - (central.minimumSizeHint().width() + 8 if central is not None else 0)
            scroll.setMinimumWidth(max(kept[0], min(want, most)))
        elif kept is not None:
            self._narrow = None
            for combo, policy in zip(combos, kept[1], strict=False):
                combo.setSizeAdjustPolicy(policy)
            scroll.setMinimumWidth(kept[0])
            window = self.window()
            if dock is not None and isinstance(window, QMainWindow):  # the width it had before presenting
                window.resizeDocks([dock], [kept[2]], Qt.Orientation.Horizontal)

    def _on_view(self, view: ViewState) -> None:
        old = self._view
        self.sync(
            frozenset(
                f"view.{f.name}" for f in fields(view) if old is None or getattr(old, f.name) != getattr(view, f.name)
            )
        )

    def _on_trace(self, _trace: Trace) -> None:
        # the first trace (or a lesson step's) picks the stage asked for before it existed, without stageChanged
        if self.session.stage != self._stage:
            self.sync(frozenset({"stage"}))

    def sync(self, changed: frozenset[str] | None = ALL_FIELDS) -> None:
        """Show the session's state in the rows that show one of the `changed` fields (None: every row).
        Emits nothing."""
        s = self.session
        self.setEnabled(s.model is not None)
        self._view, self._stage = s.view, s.stage
        if s.model is None:
            return
        for row in self.rows:
            if row is self._emitter():
                continue  # the control that made the change already shows it
            if changed is None or row.fields & changed:
                blockers = [QSignalBlocker(getattr(self, name)) for name in row.widgets]
                try:
                    row.read(self, s, s.model.config)
                finally:
                    del blockers

    def _emitter(self) -> Row | None:
        """The row whose single widget is making the change being shown, when the session took it (a refused
        change snaps that row back too). Rows of several widgets (a slider beside its spin box, the compare
        choice beside its pin button) are re-read: the others show what the one that moved chose."""
        if self._source is None:
            return None
        row, options, view = self._source
        s = self.session
        accepted = s.options is not options or s.view is not view
        return row if accepted and len(row.widgets) == 1 else None
