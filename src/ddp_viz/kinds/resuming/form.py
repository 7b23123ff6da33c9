"""The form's ``[resuming]`` fields: when part one resumes, how often part two saves, after
which step its last rank dies and torchrun's restart budget. The run trains its own model, so
the training fields hide."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QFormLayout, QSpinBox, QWidget

from ddp_viz.kinds.resuming.spec import KIND, RestartSpec
from ddp_viz.model.scenario import Scenario

# (key, label, tooltip) of each spin box, in the form's order
BOXES = (
    ("resume_epoch", "Resume after epoch", "part one saves after this many epochs, below epochs"),
    ("interval", "Checkpoint every", "steps between checkpoints under torchrun, 1–100"),
    ("kill_after", "Kill after step", "the last rank sends itself SIGKILL after this step"),
    ("max_restarts", "Max restarts", "torchrun --max-restarts, 1–5"),
)


class RestartFields:
    def __init__(self) -> None:
        self.boxes: dict[str, QSpinBox] = {}
        for key, _, tip in BOXES:
            box = QSpinBox()
            box.setRange(0, 10_000)  # out of range: shown as an error
            box.setToolTip(tip)
            self.boxes[key] = box
        self.rows: tuple[int, ...] = ()
        self._spec = RestartSpec()

    def fields(self) -> dict[str, QWidget]:
        return {f"{KIND}.{key}": box for key, box in self.boxes.items()}

    def add_to(self, form: QFormLayout) -> None:
        for key, label, _ in BOXES:
            form.addRow(label, self.boxes[key])
        n = len(BOXES)
        self.rows = tuple(range(form.rowCount() - n, form.rowCount()))

    def connect(self, slot: Callable[..., object]) -> None:
        for box in self.boxes.values():
            box.valueChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table(KIND) is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table(KIND) or RestartSpec()
        for key, box in self.boxes.items():
            box.setValue(getattr(self._spec, key))

    def write(self, raw: dict[str, Any]) -> None:
        raw[KIND] = {
            **self._spec.to_dict(),
            **{key: box.value() for key, box in self.boxes.items()},
        }


FIELDS = RestartFields
