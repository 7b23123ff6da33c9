"""What every event of the stream is, and how tensors travel in them (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

# named tensors: a list of floats, or a summary object above 64 values (ddp_viz.model.tensors)
Grads = dict[str, list[float] | dict[str, Any]]
# one tensor: a list of floats, or a summary object above 64 values
Values = list[float] | dict[str, Any]


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""
