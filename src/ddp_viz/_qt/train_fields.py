"""The form's ``[train]`` field of the core: the loss's reduction (shown with a sampler).

A kind's own ``[train]`` knobs are its form's fields, which write over this table; what has no
field here is kept as the lesson says.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox, QFormLayout, QWidget

from ddp_viz.model.dataspec import REDUCTIONS, TrainSpec


class TrainFields:
    """``reduction``, the loss's ``nn.MSELoss(reduction=…)``."""

    def __init__(self) -> None:
        self._spec = TrainSpec()
        self.reduction = QComboBox()
        self.reduction.addItems(list(REDUCTIONS))
        self.reduction.setToolTip("nn.MSELoss(reduction=…)")
        self.loss_row = -1

    def fields(self) -> dict[str, QWidget]:
        return {"train.loss_reduction": self.reduction}

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Loss", self.reduction)
        self.loss_row = form.rowCount() - 1

    def connect(self, slot: Any) -> None:
        self.reduction.currentIndexChanged.connect(slot)

    def load(self, train: TrainSpec) -> None:
        self._spec = train  # the knobs without a field here are kept as the lesson says
        self.reduction.setCurrentText(train.loss_reduction)

    def table(self) -> dict[str, Any]:
        return {**self._spec.to_dict(), "loss_reduction": self.reduction.currentText()}
