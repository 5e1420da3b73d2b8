"""A window about the whole model's heads (View → Head roles…), three tabs over the window's current run:

- "Head roles": a layers × heads map of one statistic (entropy, sink mass, previous-token and induction scores,
  mean distance); a click on a cell opens that head's attention weights in the main window;
- "Attention sink": the weight each query puts on the first position, per head, what that weight carries
  (weight × ‖v‖), and a what-if run without the leading special token (or with one added);
- "Score dimensions": q ⊙ k per dimension of one (query, key) cell of one head, bars summing to the score.

Every number and sentence comes from attnlab.present.head_roles; the runs behind the map and the what-if are
made on a thread of their own, so the window never waits on them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from attnlab.present import head_roles
from attnlab.ui.stages.common import TitleLabel, note_font, titled_heatmap
from attnlab.ui.window.geometry import resize_for_screen

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace
    from attnlab.session import Session

STAT_WORDS = tuple(head_roles.STAT_TITLES.values())


def _label(parent: QtWidgets.QWidget, name: str) -> QtWidgets.QLabel:
    label = QtWidgets.QLabel("", parent)
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setFont(note_font())
    label.setTextFormat(QtCore.Qt.TextFormat.PlainText)  # token names such as <s> are text, not markup
    return label


class _Worker(QtCore.QObject):
    """Runs one function off the GUI thread and hands its value (or its error's words) back on the GUI thread."""

    done = QtCore.Signal(object, object, object)  # (tag, value, error message or None)

    def start(self, tag: str, fn: Callable[[], Any]) -> None:
        def work() -> None:
            try:
                value, error = fn(), None
            except Exception as exc:  # any failure is said in the window; the run behind it stays
                value, error = None, f"{type(exc).__name__}: {exc}"
            try:
                self.done.emit(tag, value, error)
            except RuntimeError:  # the window was closed meanwhile
                pass

        threading.Thread(target=work, daemon=True, name=f"head-roles-{tag}").start()


class HeadRolesWindow(QtWidgets.QWidget):
    def __init__(self, session: Session, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("headRolesWindow")
        self.setWindowTitle("Head roles, attention sinks and score dimensions")
        self.session = session
        self._trace: Trace | None = None
        self._roles: head_roles.HeadRolesView | None = None
        self._worker = _Worker(self)
        self._worker.done.connect(self._on_done)
        tabs = QtWidgets.QTabWidget(self)
        tabs.setObjectName("headRolesTabs")
        tabs.addTab(self._roles_tab(), "Head roles")
        tabs.addTab(self._sink_tab(), "Attention sink")
        tabs.addTab(self._dims_tab(), "Score dimensions")
        self.tabs = tabs
        QtWidgets.QVBoxLayout(self).addWidget(tabs)
        for title in self.findChildren(TitleLabel):  # the maps' titles name tokens such as <s>: text, not markup
            title.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        session.traceReady.connect(self.refresh)
        resize_for_screen(self, 1100, 700)
        self.refresh()

    # ---- building --------------------------------------------------------------------------------------
    def _roles_tab(self) -> QtWidgets.QWidget:
        tab = QtWidgets.QWidget(self)
        self.stat = QtWidgets.QComboBox(tab)
        self.stat.setObjectName("headRolesStat")
        self.stat.addItems(list(STAT_WORDS))
        box, self.roles_map = titled_heatmap(tab, rows_title="layer", cols_title="head")
        self.roles_map.setObjectName("headRolesMap")
        self.roles_note = _label(tab, "headRolesNote")
        layout = QtWidgets.QVBoxLayout(tab)
        layout.addWidget(self.stat)
        layout.addWidget(box, 1)
        layout.addWidget(self.roles_note)
        self.stat.currentIndexChanged.connect(self._draw_roles)
        self.roles_map.cellClicked.connect(self._open_head)
        return tab

    def _sink_tab(self) -> QtWidgets.QWidget:
        tab = QtWidgets.QWidget(self)
        self.sink_site = QtWidgets.QComboBox(tab)
        self.sink_site.setObjectName("sinkSite")
        self.what_if = QtWidgets.QPushButton("Run without / with a leading special token", tab)
        self.what_if.setObjectName("sinkWhatIf")
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.sink_site, 1)
        row.addWidget(self.what_if)
        boxes = [titled_heatmap(tab, rows_title="head", cols_title="query") for _ in range(2)]
        self.sink_map, self.sink_other = (m for _b, m in boxes)
        self.sink_map.setObjectName("sinkColumn")
        self.sink_other.setObjectName("sinkWhatIfColumn")
        self.sink_bars = pg.PlotWidget(tab)
        self.sink_bars.setObjectName("sinkBars")
        self.sink_bars.addLegend()
        self.sink_note = _label(tab, "sinkNote")
        maps = QtWidgets.QHBoxLayout()
        for b, _m in boxes:
            maps.addWidget(b, 1)
        layout = QtWidgets.QVBoxLayout(tab)
        layout.addLayout(row)
        layout.addLayout(maps, 2)
        layout.addWidget(self.sink_bars, 1)
        layout.addWidget(self.sink_note)
        self.sink_site.currentIndexChanged.connect(self._draw_sink)
        self.what_if.clicked.connect(self._run_what_if)
        return tab

    def _dims_tab(self) -> QtWidgets.QWidget:
        tab = QtWidgets.QWidget(self)
        self.dims_site = QtWidgets.QComboBox(tab)
        self.dims_site.setObjectName("dimsSite")
        self.head, self.query, self.key = (QtWidgets.QSpinBox(tab) for _ in range(3))
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self.dims_site, 1)
        for word, spin, name in (("head", self.head, "dimsHead"), ("query", self.query, "dimsQuery")):
            spin.setObjectName(name)
            row.addWidget(QtWidgets.QLabel(word, tab))
            row.addWidget(spin)
        self.key.setObjectName("dimsKey")
        row.addWidget(QtWidgets.QLabel("key", tab))
        row.addWidget(self.key)
        self.dims_title = _label(tab, "dimsTitle")
        self.dims_plot = pg.PlotWidget(tab)
        self.dims_plot.setObjectName("dimsBars")
        self.dims_note = _label(tab, "dimsNote")
        layout = QtWidgets.QVBoxLayout(tab)
        layout.addLayout(row)
        layout.addWidget(self.dims_title)
        layout.addWidget(self.dims_plot, 1)
        layout.addWidget(self.dims_note)
        self.dims_site.currentIndexChanged.connect(self._site_ranges)
        for spin in (self.head, self.query, self.key):
            spin.valueChanged.connect(self._draw_dims)
        return tab

    # ---- the run ---------------------------------------------------------------------------------------
    def refresh(self, *_: object) -> None:
        """Take the window's current run: fill the pickers, draw the pages, compute the map off the GUI thread."""
        trace, model = self.session.trace, self.session.model
        if trace is None or model is None or trace is self._trace:
            return
        self._trace = trace
        choices = head_roles.site_choices(trace)
        for combo, sites in (
            (self.sink_site, [c for c in choices if not c[0].endswith(".cross")]),
            (self.dims_site, choices),
        ):
            combo.blockSignals(True)
            combo.clear()
            for site, words in sites:
                combo.addItem(words, site)
            combo.blockSignals(False)
        self._draw_sink()
        self._site_ranges()
        self.roles_note.setText("Computing the head roles (a run on a repeated random sequence)…")
        self._worker.start("roles", lambda: (trace, head_roles.head_roles(model, trace)))

    def _on_done(self, tag: str, value: Any, error: str | None) -> None:
        if error is not None:
            (self.roles_note if tag == "roles" else self.sink_note).setText(error)
            return
        trace, result = value
        if trace is not self._trace:  # a newer run came meanwhile
            return
        if tag == "roles":
            self._roles = result
            self._draw_roles()
        else:
            what, page = result
            self.sink_other.draw(
                page.column.matrix,
                page.column.rows,
                page.column.cols,
                title=f"run {what}",
                colormap="viridis",
                levels=(0.0, 1.0),
            )
            self.sink_note.setText(" ".join(page.notes))

    # ---- drawing ---------------------------------------------------------------------------------------
    def _draw_roles(self, *_: object) -> None:
        if self._roles is None:
            return
        view = self._roles.maps[self.stat.currentIndex()]
        self.roles_map.draw(view.matrix, view.rows, view.cols, title=view.title, colormap="viridis", symmetric=False)
        self.roles_note.setText(" ".join(self._roles.notes))

    def _open_head(self, row: int, col: int) -> None:
        if self._roles is None or not 0 <= row < len(self._roles.stage_keys):
            return
        self.session.set_view(head=col)
        self.session.set_stage(self._roles.stage_keys[row])

    def _draw_sink(self, *_: object) -> None:
        site = self.sink_site.currentData()
        if self._trace is None or site is None:
            return
        page = head_roles.sink_page(self._trace, site)
        c = page.column
        self.sink_map.draw(c.matrix, c.rows, c.cols, title=c.title, colormap="viridis", levels=(0.0, 1.0))
        self.sink_other.clear("Press the button to run the sentence without (or with) a leading special token.")
        self.sink_bars.clear()
        x = np.arange(len(page.mass), dtype=float)
        for offset, values, name, colour in (
            (-0.2, page.mass, "weight on position 0", "#4c72b0"),
            (0.2, page.share, "share of weight × ‖v‖", "#dd8452"),
        ):
            self.sink_bars.addItem(pg.BarGraphItem(x=x + offset, height=values, width=0.38, brush=colour, name=name))
        self.sink_bars.getAxis("bottom").setTicks([[(float(i), label) for i, label in enumerate(c.rows or [])]])
        self.sink_note.setText(" ".join(page.notes))

    def _run_what_if(self) -> None:
        site, trace, model = self.sink_site.currentData(), self._trace, self.session.model
        if site is None or trace is None or model is None:
            return
        self.sink_note.setText("Running the what-if…")
        self._worker.start("sink", lambda: (trace, head_roles.sink_comparison(model, trace, site)))

    def _site_ranges(self, *_: object) -> None:
        site = self.dims_site.currentData()
        if self._trace is None or site is None:
            return
        heads, tq, tk = head_roles.site_size(self._trace, site)
        for spin, top in ((self.head, heads), (self.query, tq), (self.key, tk)):
            spin.blockSignals(True)
            spin.setRange(0, top - 1)
            spin.blockSignals(False)
        self._draw_dims()

    def _draw_dims(self, *_: object) -> None:
        site = self.dims_site.currentData()
        if self._trace is None or site is None:
            return
        view = head_roles.neuron_view(self._trace, site, self.head.value(), self.query.value(), self.key.value())
        self.dims_title.setText(view.title)
        self.dims_plot.clear()
        x = np.arange(len(view.products), dtype=float)
        brushes = ["#4c72b0" if v >= 0 else "#c44e52" for v in view.products]
        self.dims_plot.addItem(pg.BarGraphItem(x=x, height=view.products, width=0.8, brushes=brushes))
        every = max(1, len(view.labels) // 32)  # at most about 32 dimension names under the bars
        ticks = [(float(d), label) for d, label in enumerate(view.labels) if d % every == 0]
        self.dims_plot.getAxis("bottom").setTicks([ticks])
        self.dims_note.setText(" ".join(view.notes))

    def shown_numbers(self) -> dict[str, np.ndarray]:
        """What the pages show now (tests): the map, the sink column and the bars, as present/ gave them."""
        shown: dict[str, np.ndarray] = {}
        if self._roles is not None:
            shown["roles"] = self._roles.maps[self.stat.currentIndex()].matrix
        sink, dims = self.sink_site.currentData(), self.dims_site.currentData()
        if self._trace is not None and sink is not None:
            shown["sink"] = head_roles.sink_page(self._trace, sink).column.matrix
        if self._trace is not None and dims is not None:
            cell = (self.head.value(), self.query.value(), self.key.value())
            shown["dims"] = head_roles.neuron_view(self._trace, dims, *cell).products
        return shown


def show_head_roles(host: QtWidgets.QWidget, session: Session) -> HeadRolesWindow:
    """The head-roles window of `host` (one per main window), shown and raised."""
    window = host.findChild(HeadRolesWindow)
    if window is None:
        window = HeadRolesWindow(session, host)
        window.setWindowFlag(QtCore.Qt.WindowType.Window)
    window.show()
    window.raise_()
    return window
