"""What `attnlab render` and its slide and GIF modes (render.py, render_slides.py) share: starting the Qt
application that draws, off screen when there is no display, and how a refusal is reported."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from attnlab.commands.refusal import refuse

Frame = TypeVar("Frame")

# bytes per pixel a GIF frame holds while it is drawn (ui/window/slides.py): the RGB32 image (4), its RGB888
# copy, the bytes handed to Pillow and Pillow's RGB image (3 each); and the palette frame kept until the GIF is
# written (1)
GIF_WORK_PER_PIXEL = 13
GIF_KEPT_PER_PIXEL = 1


def fail(message: str) -> int:
    return refuse("attnlab render", message)


def start_qt() -> None:
    """The Qt application drawing needs; off screen when there is no display to reach."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from attnlab.ui.window import app as appsettings

    appsettings.create_app(["attnlab-render"])


def gif_bytes(frames: int, pixels: int) -> int:
    """Memory a GIF of `frames` frames of `pixels` pixels holds at its peak: every frame kept, one being drawn."""
    return frames * GIF_KEPT_PER_PIXEL * pixels + GIF_WORK_PER_PIXEL * pixels


def counted_frames(frames: Iterable[Frame], pixels: int, expected: int | None) -> Iterator[Frame]:
    """`frames`, each counted before it is drawn (and all `expected` of them before the first, when known):
    RunTooBig, one line with the numbers, when the GIF's frames cannot fit the memory there is."""
    from attnlab.engine.output_budget import check_memory

    if expected is not None:
        check_memory(f"an animated GIF of {expected} frames", gif_bytes(expected, pixels))
    for n, frame in enumerate(frames, 1):
        if expected is None or n > expected:  # the frames so far are held already: this one more
            check_memory(f"frame {n} of the animated GIF", gif_bytes(1, pixels))
        yield frame
