"""The form's ``[collective]`` fields (the all-reduce lesson): values per rank and the seed.

A collective run trains nothing, so the form shows these and the world size and hides the
training fields; this module owns the widgets and what they read and write.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QFormLayout, QSpinBox, QWidget

from ddp_viz.kinds.collective.model import MAX_LENGTH, CollectiveSpec
from ddp_viz.model.scenario import Scenario


class CollectiveFields:
    def __init__(self) -> None:
        self.length = QSpinBox()
        self.length.setRange(0, 10 * MAX_LENGTH)  # out of range: shown as an error
        self.length.setGroupSeparatorShown(True)
        self.length.setToolTip("values in each rank's vector (whole numbers from −9 to 9)")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("the vectors' random seed (rank r uses seed × 1009 + r)")
        self.rows: tuple[int, ...] = ()
        self._spec = CollectiveSpec()

    def fields(self) -> dict[str, QWidget]:
        return {"collective.length": self.length, "collective.seed": self.seed}

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Values per rank", self.length)
        form.addRow("Seed", self.seed)
        self.rows = (form.rowCount() - 2, form.rowCount() - 1)

    def connect(self, slot: Any) -> None:
        self.length.valueChanged.connect(slot)
        self.seed.valueChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table("collective") is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table("collective") or CollectiveSpec()
        self.length.setValue(self._spec.length)
        self.seed.setValue(self._spec.seed)

    def write(self, raw: dict[str, Any]) -> None:
        raw["collective"] = self.table()

    def table(self) -> dict[str, Any]:
        """The spec as the form has it (the timing sweep kept as the lesson set it)."""
        return {**self._spec.to_dict(), "length": self.length.value(), "seed": self.seed.value()}


FIELDS = CollectiveFields
