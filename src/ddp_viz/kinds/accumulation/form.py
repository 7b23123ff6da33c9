"""The form's fields for gradient accumulation: micro-batches a step with the loss's scale, and
where ``no_sync`` goes. They edit the core's ``[train]`` knobs, shown when the lesson's scenario
accumulates."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QHBoxLayout, QSpinBox, QWidget

from ddp_viz.model.dataspec import MAX_ACCUMULATE, PLACEMENT_LABELS, PLACEMENTS, TrainSpec
from ddp_viz.model.scenario import Scenario


class AccumulationFields:
    def __init__(self) -> None:
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
        self.rows: tuple[int, ...] = ()

    def fields(self) -> dict[str, QWidget]:
        return {
            "train.accumulate": self.accumulate,
            "train.scale_loss": self.scale_loss,
            "train.no_sync": self.no_sync,
        }

    def add_to(self, form: QFormLayout) -> None:
        micro = QHBoxLayout()  # the count and its scale side by side: one row fewer
        micro.setContentsMargins(0, 0, 0, 0)
        micro.addWidget(self.accumulate, 1)
        micro.addWidget(self.scale_loss)
        form.addRow("Micro-batches", micro)
        form.addRow("no_sync()", self.no_sync)
        self.rows = (form.rowCount() - 2, form.rowCount() - 1)

    def connect(self, slot: Any) -> None:
        self.accumulate.valueChanged.connect(slot)
        self.scale_loss.toggled.connect(slot)
        self.no_sync.currentIndexChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return accumulates(scenario.train)

    def load(self, scenario: Scenario) -> None:
        train = scenario.train
        self.accumulate.setValue(train.accumulate)
        self.scale_loss.setChecked(train.scale_loss)
        self.no_sync.setCurrentIndex(max(0, self.no_sync.findData(train.no_sync)))

    def write(self, raw: dict[str, Any]) -> None:
        """The core's ``[train]`` knobs of accumulation (the loss's reduction is the core's)."""
        raw["train"] = {
            **raw["train"],
            "accumulate": self.accumulate.value(),
            "scale_loss": self.scale_loss.isChecked(),
            "no_sync": self.no_sync.currentData(),
        }


def accumulates(train: TrainSpec) -> bool:
    """More than one micro-batch a step, or ``no_sync`` placed anywhere: what makes a run of
    this kind (its claim reads the same knobs from a mapping)."""
    return train.accumulate > 1 or train.no_sync != "none"


FIELDS = AccumulationFields
