"""The one error for bad scenario input, shared by the scenario and its [model]/[ddp] tables."""

from __future__ import annotations


class ScenarioError(ValueError):
    """Invalid scenario input; ``field`` names the offending key (``lr``, ``model.hidden[0]``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
