"""How long the GUI thread is blocked while the app works: a 5 ms QTimer records the gaps between its ticks.

Used by ui_bench.py (`--gaps`). Each scenario drives the real Session (runs on its worker thread, the window's
handlers on the GUI thread) the way a person does — toggles clicked, a sentence typed, tokens generated — and
reports the longest gap between two ticks (target: ≤ 50 ms) and the 99th percentile. A gap is the time
between two ticks minus nothing: a timer that fires on time shows ~5 ms.
"""

from __future__ import annotations

import time

TICK_MS = 5
TARGET_GAP_MS = 50.0


class GapMeter:
    """Counts the time between the ticks of a 5 ms timer on the GUI thread."""

    def __init__(self):
        from PySide6.QtCore import Qt, QTimer

        self.gaps: list[float] = []
        self._last: float | None = None
        self._worst_at = ""
        self.phase = ""
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._last is not None:
            self.gaps.append((now - self._last) * 1000.0)
        self._last = now

    def start(self) -> None:
        self.gaps, self._last = [], None
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        return self.gaps


def wait_until(app, done, timeout_s: float = 120.0) -> None:
    """Let the event loop run (timers fire, traces arrive) until done() holds."""
    end = time.perf_counter() + timeout_s
    while not done() and time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.001)


def settle(app, session, timeout_s: float = 120.0) -> None:
    """Wait until no run is waiting or under way, then a little more for the last repaint."""
    wait_until(app, lambda: not session.busy and not session._debounce.isActive(), timeout_s)
    wait_until(app, lambda: False, 0.05)


def toggle_scenario(app, session, options_cycle, n: int) -> None:
    """Click n toggles, each after the previous one's trace is on screen."""
    for _ in range(n):
        session.set_options(next(options_cycle))
        settle(app, session)


def typing_scenario(app, session, text: str, ms_per_key: float = 60.0) -> None:
    """Type `text` into the source box one character at a time (a brisk typist), then wait for the trace."""
    typed = ""
    for ch in text:
        typed += ch
        session.set_src(typed)  # debounced, as the text box does
        wait_until(app, lambda: False, ms_per_key / 1000.0)
    settle(app, session)


def generation_scenario(app, session, n: int) -> None:
    """Press "next token" n times, each after the previous token's trace is on screen."""
    for _ in range(n):
        session.generate_next()
        settle(app, session)


def measure(app, session, label: str, scenario, *args) -> tuple[str, list[float]]:
    meter = GapMeter()
    meter.start()
    scenario(app, session, *args)
    return label, meter.stop()


def report(rows: list[tuple[str, list[float]]], pct) -> int:
    """Print one line per scenario; returns how many missed the target."""
    print(f"\nGUI thread: gaps between the ticks of a {TICK_MS} ms timer (target: longest ≤ {TARGET_GAP_MS:.0f} ms)\n")
    header = f"{'scenario':<34}{'ticks':>7}{'p50':>8}{'p99':>8}{'longest':>9}   verdict"
    print(header)
    print("-" * len(header))
    missed = 0
    for label, gaps in rows:
        if not gaps:
            print(f"{label:<34}{0:>7}   (no ticks)")
            continue
        worst = max(gaps)
        ok = worst <= TARGET_GAP_MS
        missed += not ok
        print(
            f"{label:<34}{len(gaps):>7}{pct(gaps, 0.5):8.1f}{pct(gaps, 0.99):8.1f}{worst:9.1f}   "
            + ("ok" if ok else "MISSED")
        )
    return missed
