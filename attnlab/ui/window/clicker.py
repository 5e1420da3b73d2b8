"""The keys a presenter presses, taken before any focused widget sees them (an application event filter).

- Always: PageDown / PageUp / → / ← / Space step the stages wherever the focus is (a slider, a spin box, a
  button, a plot, the explanation), except in a text box with a cursor, which keeps its keys as any text box
  does. ↑ / ↓ still move sliders and spin boxes.
- Presenting (F5): the keys step whatever has the focus, text boxes included: Home / End jump to the ends, E
  folds the explanation, T the toggles dock, Esc leaves. A text box keeps its keys only after the person asked
  to type: a click into it, or Ctrl+L (source) / Ctrl+Shift+L (decoder input). Until then it takes no typing
  at all (a letter, Backspace, a paste), so a stray key never changes the sentence in front of a class, and
  the focus handed to it otherwise (a hidden dock or panel passing it on, Tab) goes back to the stage. Enter
  or Esc in the box, or the focus leaving it, gives the keys back to the clicker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence, QMouseEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QLineEdit, QPlainTextEdit, QTextEdit, QWidget

if TYPE_CHECKING:
    from attnlab.ui.window.window_host import WindowHost

CLICKER_STEPS: dict[int, int] = {  # Qt.Key -> stages to step, from any focus
    Qt.Key.Key_PageDown: 1,
    Qt.Key.Key_PageUp: -1,
    Qt.Key.Key_Right: 1,
    Qt.Key.Key_Left: -1,
    Qt.Key.Key_Space: 1,
}
PRESENT_JUMPS: dict[int, int] = {Qt.Key.Key_Home: -(10**9), Qt.Key.Key_End: 10**9}  # presenting: to the ends
EDITING = (  # what a text box not asked to type never gets while presenting
    QKeySequence.StandardKey.Paste,
    QKeySequence.StandardKey.Cut,
    QKeySequence.StandardKey.Undo,
    QKeySequence.StandardKey.Redo,
    QKeySequence.StandardKey.Delete,
    QKeySequence.StandardKey.DeleteStartOfWord,
    QKeySequence.StandardKey.DeleteEndOfWord,
)
_ERASERS = (Qt.Key.Key_Backspace, Qt.Key.Key_Delete)
TYPE_HINT = "To type: click into the sentence, or Ctrl+L"
TYPING_HINT = "Typing into the sentence · Enter or Esc: done"


def is_text_box(widget: QWidget | None) -> bool:
    """A widget where keys type text: an editable line edit (not a spin box's) or text editor."""
    if isinstance(widget, QLineEdit):
        return not widget.isReadOnly() and not isinstance(widget.parent(), QAbstractSpinBox)
    if isinstance(widget, QTextEdit | QPlainTextEdit):
        return not widget.isReadOnly()
    return False


def has_focus_inside(widget: QWidget) -> bool:
    """Whether the keyboard focus is on a widget inside `widget`."""
    focus = QApplication.focusWidget()
    return focus is not None and widget.isAncestorOf(focus)


def text_box_of(widget: QObject | None) -> QWidget | None:
    """The text box `widget` is, or is the viewport of (a QTextEdit's clicks go to its viewport)."""
    for candidate in (widget, widget.parent() if widget is not None else None):
        if isinstance(candidate, QWidget) and is_text_box(candidate):
            return candidate
    return None


def _plain(event: QKeyEvent) -> bool:
    return not event.modifiers() & ~(Qt.KeyboardModifier.KeypadModifier | Qt.KeyboardModifier.ShiftModifier)


class ClickerFilter(QObject):
    """Application-wide: the clicker keys, and presenting also Home / End, E, T and Esc, before any focused
    widget sees them. `typing_in` is the text box the person asked to type into while presenting (None: none)."""

    def __init__(self, window: WindowHost):
        super().__init__(window)
        self.window = window
        self.typing_in: QWidget | None = None
        app = QApplication.instance()
        assert isinstance(app, QApplication)  # a window exists
        app.focusChanged.connect(self._focus_changed)

    # ---- typing into a text box while presenting ----------------------------------------------------------
    def allow_typing(self, box: QWidget) -> None:
        """The person asked to type into `box` (a click, Ctrl+L): it keeps its keys until the focus leaves it."""
        if self.window.presenting and box is not self.typing_in:
            self.typing_in = box
            self.window.present_hint.setText(TYPING_HINT)  # where the keys are said (no second message)

    def stop_typing(self) -> None:
        if self.typing_in is not None:
            self.typing_in = None
            self.window.present_hint.setText(self.window.present_keys_hint)

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if self.typing_in is not None and new is not None and new is not self.typing_in:
            self.stop_typing()
        w = self.window
        if (
            w.presenting
            and new is not self.typing_in
            and is_text_box(new)
            and new is not None
            and new.window() is w
            and QApplication.mouseButtons() == Qt.MouseButton.NoButton
        ):  # not a click: a hidden dock or panel handed it on, or Tab; the keys stay the presenter's
            w.stage_area.setFocus()

    # ---- the keys -----------------------------------------------------------------------------------------
    def _action(self, target: QWidget, event: QKeyEvent) -> Callable[[], None] | None:
        w = self.window
        if QApplication.activePopupWidget() is not None or QApplication.activeModalWidget() is not None:
            return None
        if target.window() is not w:  # another window (a dialog, the stage search) keeps its keys
            return None
        text_box = is_text_box(target)
        if not w.presenting:
            if text_box or event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
                return None
            key = event.key()
            return (lambda: w.step(CLICKER_STEPS[key])) if key in CLICKER_STEPS else self._answer(event)
        if text_box and target is self.typing_in:
            if event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter) and _plain(event):
                return w.leave_text_box  # the keys step again (Enter has already run the sentence)
            return None
        return self._presenting_action(target, event, text_box)

    def _presenting_action(self, target: QWidget, event: QKeyEvent, text_box: bool) -> Callable[[], None] | None:
        """Presenting, in any widget but a text box the person is typing into."""
        w, key = self.window, event.key()
        plain = not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if plain and key in CLICKER_STEPS:
            return lambda: w.step(CLICKER_STEPS[key])  # a playing lesson's next step, else the next stage
        if plain and key in PRESENT_JUMPS:
            return lambda: w.step(PRESENT_JUMPS[key])
        if plain and key == Qt.Key.Key_T:
            return w.toggle_controls_dock
        if plain and key == Qt.Key.Key_E:
            return w.toggle_explanation
        if plain and key == Qt.Key.Key_Escape:
            return lambda: w.set_presenting(False)
        if plain and (answer := self._answer(event)) is not None:
            return answer
        typed = bool(event.text()) and event.text().isprintable() or key in _ERASERS
        if text_box and ((_plain(event) and typed) or any(event.matches(k) for k in EDITING)):
            # a text box nobody asked to type into: the key does nothing, the status bar says how to type
            return lambda: w.statusBar().showMessage(TYPE_HINT, 4000)
        return None

    def _answer(self, event: QKeyEvent) -> Callable[[], None] | None:
        """A–D while a lesson's question waits for an answer: that choice (the card's buttons take no focus)."""
        player = getattr(self.window, "lesson_player", None)
        quiz = getattr(player, "quiz", None)
        letter = event.text().upper()
        if quiz is None or not quiz.waiting or len(letter) != 1 or letter not in "ABCD":
            return None
        return lambda: quiz.choose(letter)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        # every event of the application passes here: a type test first (reading event.type() makes a Python
        # enum per event, ~1 ms of each repaint); KeyPress and ShortcutOverride are both QKeyEvents
        if isinstance(event, QMouseEvent):
            if self.window.presenting and event.type() == QEvent.Type.MouseButtonPress:
                box = text_box_of(obj)
                if box is not None and box.window() is self.window:
                    self.allow_typing(box)  # a click into the sentence: the person means to type
            return False
        if not isinstance(event, QKeyEvent):
            return False
        kind = event.type()
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) or not isinstance(obj, QWidget):
            return False
        action = self._action(obj, event)
        if action is None:
            return False
        if kind == QEvent.Type.ShortcutOverride:  # claim the key so no window shortcut (PgDown, Esc) fires too
            event.accept()
            return True
        action()
        return True
