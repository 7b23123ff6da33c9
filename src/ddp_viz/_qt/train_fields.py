"""The form's ``[train]`` fields: the loss's reduction, and gradient accumulation with ``no_sync``.

Kept out of the scenario form so the form stays one screen of code; the form owns layout
and validation, this owns the widgets and what they read and write.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QHBoxLayout, QSpinBox, QWidget

from ddp_viz.model.dataspec import MAX_ACCUMULATE, PLACEMENTS, REDUCTIONS, TrainSpec

PLACEMENT_LABELS = {
    "none": "none",
    "forward_and_backward": "fwd + backward",  # short: the form's column is narrow
    "backward_only": "backward only",
}


class TrainFields:
    """``reduction`` (shown with a sampler), ``accumulate``, ``scale_loss`` and ``no_sync``
    (shown when the lesson's scenario accumulates)."""

    def __init__(self) -> None:
        self._spec = TrainSpec()
        self.reduction = QComboBox()
        self.reduction.addItems(list(REDUCTIONS))
        self.reduction.setToolTip("nn.MSELoss(reduction=…)")
        self.accumulate = QSpinBox()
        self.accumulate.setRange(0, 10 * MAX_ACCUMULATE)  # out of range: shown as an error
        self.accumulate.setToolTip(
            f"micro-batches per optimizer.step(), 1–{MAX_ACCUMULATE}; .grad adds them up"
        )
        self.scale_loss = QCheckBox("loss ÷ k")
        self.scale_loss.setToolTip("divide each micro-batch's loss by k before backward")
        self.no_sync = QComboBox()
        for placement in PLACEMENTS:
            self.no_sync.addItem(PLACEMENT_LABELS[placement], placement)
        self.no_sync.setToolTip(
            "where `with model.no_sync():` goes on every micro-batch but the last"
        )
        self.accumulation_rows: tuple[int, ...] = ()
        self.loss_row = -1

    def fields(self) -> dict[str, QWidget]:
        return {
            "train.loss_reduction": self.reduction,
            "train.accumulate": self.accumulate,
            "train.scale_loss": self.scale_loss,
            "train.no_sync": self.no_sync,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Loss", self.reduction)
        self.loss_row = form.rowCount() - 1
        micro = QHBoxLayout()  # the count and its scale side by side: one row fewer
        micro.setContentsMargins(0, 0, 0, 0)
        micro.addWidget(self.accumulate, 1)
        micro.addWidget(self.scale_loss)
        form.addRow("Micro-batches", micro)
        form.addRow("no_sync()", self.no_sync)
        self.accumulation_rows = (form.rowCount() - 2, form.rowCount() - 1)

    def connect(self, slot: Any) -> None:
        self.reduction.currentIndexChanged.connect(slot)
        self.accumulate.valueChanged.connect(slot)
        self.scale_loss.toggled.connect(slot)
        self.no_sync.currentIndexChanged.connect(slot)

    def load(self, train: TrainSpec) -> None:
        self._spec = train  # what has no field here (checkpoint) is kept as the lesson says
        self.reduction.setCurrentText(train.loss_reduction)
        self.accumulate.setValue(train.accumulate)
        self.scale_loss.setChecked(train.scale_loss)
        self.no_sync.setCurrentIndex(max(0, self.no_sync.findData(train.no_sync)))

    def table(self) -> dict[str, Any]:
        return {
            **self._spec.to_dict(),
            "loss_reduction": self.reduction.currentText(),
            "accumulate": self.accumulate.value(),
            "scale_loss": self.scale_loss.isChecked(),
            "no_sync": self.no_sync.currentData(),
        }
