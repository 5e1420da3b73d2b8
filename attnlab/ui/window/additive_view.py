"""A window: the additive-attention (GRU) model's alignment per output step beside the Transformer's
cross-attention for the same sentence. Opened from File → Open bundled model → "Additive attention (GRU)"
(or by opening a bahdanau.safetensors file); the numbers come from attnlab.present.additive_compare."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6 import QtWidgets

from attnlab.checkpoints.additive import TITLE, AdditiveModel
from attnlab.present.additive_compare import Alignment, additive_alignment, cross_attention_alignment
from attnlab.present.model_info import cross_attention_layers
from attnlab.ui.stages.common import note_font, titled_heatmap

if TYPE_CHECKING:
    from attnlab.present.engine_api import LiveModel

INTRO = (
    "Additive attention (Bahdanau et al., 2014) scores each source state h against the decoder state s with "
    "a small network, score(s, h) = vᵀ tanh(W s + U h); the Transformer replaced it by the scaled dot "
    "product q · k / √dₖ. Rows: the output step that wrote each token; columns: the source tokens."
)


def _wrapped_label(parent: QtWidgets.QWidget, text: str) -> QtWidgets.QLabel:
    label = QtWidgets.QLabel(text, parent)
    label.setWordWrap(True)
    label.setFont(note_font())
    label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Preferred, QtWidgets.QSizePolicy.Policy.Maximum)
    return label


class AdditiveCompareWindow(QtWidgets.QWidget):
    def __init__(
        self,
        additive: AdditiveModel,
        transformer: LiveModel | None,
        sentence: str,
        parent: QtWidgets.QWidget | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("additiveWindow")
        self.setWindowTitle(f"{TITLE} beside the Transformer's cross-attention")
        self._additive, self._transformer = additive, transformer
        intro = _wrapped_label(self, INTRO)
        self._sentence = QtWidgets.QLineEdit(sentence, self)
        self._sentence.setObjectName("additiveSentence")
        self._sentence.setFont(note_font())
        self._layer = QtWidgets.QComboBox(self)
        self._layer.setObjectName("crossLayerCombo")
        n_layers = cross_attention_layers(transformer)  # 0: no cross-attention to compare with
        self._layer.addItems([f"decoder layer {i + 1}, mean of heads" for i in range(n_layers)])
        self._layer.setCurrentIndex(max(n_layers - 1, 0))
        row = QtWidgets.QHBoxLayout()
        row.addWidget(self._sentence, 1)
        row.addWidget(self._layer)
        boxes = [titled_heatmap(self, rows_title="output step", cols_title="source token") for _ in range(2)]
        self._maps = [m for _, m in boxes]
        self._maps[0].setObjectName("additiveAlignment")
        self._maps[1].setObjectName("transformerCrossAttention")
        maps = QtWidgets.QHBoxLayout()
        for box, _ in boxes:
            maps.addWidget(box, 1)
        self._note = _wrapped_label(self, "")
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(row)
        layout.addLayout(maps, 1)
        layout.addWidget(self._note)
        self._data: dict[str, Alignment] = {}
        self._sentence.editingFinished.connect(self.refresh)
        self._layer.currentIndexChanged.connect(self.refresh)
        self.resize(1200, 620)
        self.refresh()

    def refresh(self) -> None:
        text = self._sentence.text().strip()
        gru = additive_alignment(self._additive, text)
        self._maps[0].draw(
            gru.matrix, gru.rows, gru.cols, title=f"{TITLE}: “{gru.text}”", colormap="viridis", levels=(0.0, 1.0)
        )
        self._data = {"additive": gru}
        if self._transformer is not None and cross_attention_layers(self._transformer):
            tr = cross_attention_alignment(self._transformer, text, layer=self._layer.currentIndex())
            self._maps[1].draw(
                tr.matrix,
                tr.rows,
                tr.cols,
                title=f"Transformer cross-attention: “{tr.text}”",
                colormap="viridis",
                levels=(0.0, 1.0),
            )
            self._data["transformer"] = tr
            self._note.setText(
                "Both models share one tokenizer and were trained on the same sentence pairs. "
                "A bright diagonal (bent where word order differs, e.g. adjectives after the "
                "noun in French) means the step reads the source word it translates."
            )
        else:
            self._maps[1].clear("The open model has no cross-attention (open the translation model to compare).")
            self._note.setText("")

    def shown_data(self) -> dict[str, Alignment]:
        return dict(self._data)
