"""One rank's report of one step, as the events bring it (pure model layer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddp_viz.model.protocol import Grads


@dataclass
class RankStep:
    loss: float | None = None
    local: Grads | None = None
    averaged: Grads | None = None
    params: Grads | None = None
    buckets: list[list[str]] = field(default_factory=list)
    spans: dict[str, list[list[float]]] = field(default_factory=dict)
    ready: list[list[Any]] = field(default_factory=list)  # [name, time] in the order it happened
    vs_full_batch: dict[str, float] = field(default_factory=dict)  # rank 0's max |avg - ref|
    bucket_spans: list[dict[str, Any]] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # the rows this rank trained on in this step
    epoch: int = 0
    # False: the rank sent this step's loss, buckets and timings but no tensor values
    # (model.reference.values_due): no local, averaged or parameter values will come
    values: bool = True

    @property
    def complete(self) -> bool:
        if not self.values:  # its loss and its timings are all it sends
            return self.loss is not None and bool(self.spans)
        return None not in (self.loss, self.local, self.averaged, self.params)
