"""The form's fields for what DDP does not average: DDP's ``forward_sync_buffers`` and
``find_unused_parameters``, and the model's unused ``aux`` branch."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QFormLayout, QWidget

from ddp_viz.model.modelspec import ModelSpec
from ddp_viz.model.scenario import Scenario


class NotAveragedFields:
    def __init__(self) -> None:
        self.sync = QCheckBox("forward_sync_buffers")
        self.sync.setToolTip("DDP(forward_sync_buffers=…): copy rank 0's buffers to every rank")
        self.unused = QCheckBox("aux, never called")
        self.unused.setToolTip("the model holds model.aux = nn.Linear(1, 1); forward skips it")
        self.find = QCheckBox("find_unused_parameters")
        self.find.setToolTip("DDP(find_unused_parameters=…): walk the graph after each forward")
        self.boxes = (self.sync, self.unused, self.find)
        self.rows: tuple[int, ...] = ()
        self._model = ModelSpec()

    def applies(self, scenario: Scenario) -> bool:
        return _applies(scenario.model)

    def fields(self) -> dict[str, QWidget]:
        return {
            "ddp.forward_sync_buffers": self.sync,
            "model.unused": self.unused,
            "ddp.find_unused_parameters": self.find,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Buffers", self.sync)
        form.addRow("Unused branch", self.unused)
        form.addRow("Unused params", self.find)
        self.rows = tuple(range(form.rowCount() - 3, form.rowCount()))

    def connect(self, slot: Any) -> None:
        for box in self.boxes:
            box.toggled.connect(slot)

    def load(self, scenario: Scenario) -> None:
        self._model = scenario.model
        self.sync.setChecked(scenario.ddp.forward_sync_buffers)
        self.unused.setChecked(scenario.model.unused)
        self.find.setChecked(scenario.ddp.find_unused_parameters)

    def write(self, raw: dict[str, Any]) -> None:
        """The core's ``[model] unused`` and ``[ddp]`` flags, for a model these fields apply to
        (another lesson's model keeps its own)."""
        if not _applies(self._model):
            return
        raw["model"] = {**raw["model"], "unused": self.unused.isChecked()}
        raw["ddp"] = {
            **raw["ddp"],
            "forward_sync_buffers": self.sync.isChecked(),
            "find_unused_parameters": self.find.isChecked(),
        }


def _applies(model: ModelSpec) -> bool:
    return model.norm == "batch" or model.unused


FIELDS = NotAveragedFields
