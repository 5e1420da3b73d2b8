"""The Qt-free presentation layer between the session and the widgets.

What a person steps through and reads, computed from a Trace with plain Python: the stage list
(`stages`), each stage kind's view-model and explanation page, registered once in `kinds` (the view in
`views/<kind>.py`, its words and formulas in `explain_<kind>.py` beside it), facts read off a run (`facts`), the
texts in the input boxes and what generation appends (`texts`), and the torch thread set-up (`runtime`).
Nothing here imports PySide6 or pyqtgraph (an import-linter contract and tests/project/test_architecture.py hold
that), and nothing imports torch at module level, so the window can paint before the engine has loaded.
"""
