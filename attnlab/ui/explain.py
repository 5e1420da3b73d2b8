"""Re-export: the explanations live in `attnlab.present.explain` (Qt-free); ui.main_window still imports here."""

from attnlab.present.explain import explanation_html

__all__ = ["explanation_html"]
