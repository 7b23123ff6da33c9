"""The form's fields for what DDP does not average: DDP's ``forward_sync_buffers`` and
``find_unused_parameters``, and the model's unused ``aux`` branch."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtWidgets import QCheckBox, QFormLayout, QWidget

from ddp_viz.model.modelspec import DDPSpec, ModelSpec


class StateFields:
    def __init__(self) -> None:
        self.sync = QCheckBox("forward_sync_buffers")
        self.sync.setToolTip("DDP(forward_sync_buffers=…): copy rank 0's buffers to every rank")
        self.unused = QCheckBox("aux, never called")
        self.unused.setToolTip("the model holds model.aux = nn.Linear(1, 1); forward skips it")
        self.find = QCheckBox("find_unused_parameters")
        self.find.setToolTip("DDP(find_unused_parameters=…): walk the graph after each forward")
        self.boxes = (self.sync, self.unused, self.find)
        self.rows: tuple[int, ...] = ()

    @staticmethod
    def applies(model: ModelSpec) -> bool:
        return model.norm == "batch" or model.unused

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

    def load(self, model: ModelSpec, ddp: DDPSpec) -> None:
        self.sync.setChecked(ddp.forward_sync_buffers)
        self.unused.setChecked(model.unused)
        self.find.setChecked(ddp.find_unused_parameters)

    def model_table(self, model: ModelSpec) -> dict[str, Any]:
        if not self.applies(model):
            return model.to_dict()
        return replace(model, unused=self.unused.isChecked()).to_dict()

    def ddp_table(self, ddp: DDPSpec, applies: bool) -> dict[str, Any]:
        table = ddp.to_dict()
        if applies:
            table["forward_sync_buffers"] = self.sync.isChecked()
            table["find_unused_parameters"] = self.find.isChecked()
        return table
