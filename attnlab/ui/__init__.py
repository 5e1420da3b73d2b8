"""Qt widgets of the attnlab desktop app (PySide6 + pyqtgraph)."""
