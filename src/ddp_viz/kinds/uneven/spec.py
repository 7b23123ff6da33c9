"""Uneven inputs (``[uneven]``): the last rank has more batches than the others.

Pure model layer. Without ``join`` the ranks that run out wait at the next collective of the
script (a ``dist.barrier()`` before saving, as scripts do) while the last rank waits in its
all-reduce: the collectives do not match, and the process group's timeout ends the stall,
unless ``debug`` finds it first: ``"detail"`` creates the process group with
``TORCH_DISTRIBUTED_DEBUG=DETAIL`` (each collective checked against the other ranks' first),
``"monitored_barrier"`` makes the script's barrier ``dist.monitored_barrier``. With ``join``
the loop runs inside ``torch.distributed.algorithms.Join([ddp])``, whose DDP hook has the
finished ranks all-reduce zeros in step with the last one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import flag, whole

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario

KEYS = ("batches", "extra", "join", "timeout_s", "debug")
DEBUG = ("none", "detail", "monitored_barrier")
MONITOR_S = 2.0  # the monitored barrier's own timeout: it must pass before the group's


@dataclass(frozen=True)
class UnevenSpec:
    """``batches`` steps on every rank, ``extra`` more on the last rank; ``join`` wraps the
    loop in ``Join``; ``timeout_s``: this run's process-group timeout, short so the stall ends
    while the learner watches (other lessons keep theirs); ``debug``: how the script finds a
    hang (one of :data:`DEBUG`)."""

    batches: int = 3
    extra: int = 1
    join: bool = False
    timeout_s: float = 4.0
    debug: str = "none"

    @classmethod
    def from_mapping(cls, data: Any) -> UnevenSpec:
        table = spec_table(data, "uneven", KEYS)
        values: dict[str, Any] = {}
        if "batches" in table:
            values["batches"] = whole("uneven.batches", table["batches"], 1, 1000)
        if "extra" in table:
            values["extra"] = whole("uneven.extra", table["extra"], 0, 100)
        if "join" in table:
            values["join"] = flag("uneven.join", table["join"])
        if "timeout_s" in table:
            t = table["timeout_s"]
            if isinstance(t, bool) or not isinstance(t, int | float) or not 1 <= t <= 30:
                raise ScenarioError("uneven.timeout_s", f"must be 1 to 30 seconds, got {t!r}")
            values["timeout_s"] = float(t)
        if "debug" in table:
            if table["debug"] not in DEBUG:
                raise ScenarioError("uneven.debug", f"must be one of {', '.join(DEBUG)}")
            values["debug"] = table["debug"]
        spec = cls(**values)
        if spec.debug == "monitored_barrier" and spec.timeout_s <= MONITOR_S:
            raise ScenarioError(
                "uneven.timeout_s",
                f"monitored_barrier waits {MONITOR_S:g} s: give the process group longer",
            )
        return spec

    trains: ClassVar[bool] = True

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}

    def fixed_steps(self, world: int) -> int:
        """The last rank's batches: the run is that long."""
        return self.steps

    def check_scenario(self, s: Scenario) -> None:
        if s.world_size < 2:
            raise ScenarioError("world_size", "uneven inputs need at least 2 ranks")
        if s.steps != self.steps:
            raise ScenarioError(
                "steps",
                f"[uneven] gives the last rank {self.steps} batches: the run is that long; "
                "leave steps out",
            )
        if s.data.distributed or s.train.accumulate > 1:
            raise ScenarioError("uneven", "uneven inputs use contiguous blocks, one step each")
        # BatchNorm and an unused branch are taught with one batch per rank and step, together
        if s.model.norm == "batch":
            raise ScenarioError(
                "model.norm", "BatchNorm trains here on contiguous blocks, one each step"
            )
        if s.model.unused:
            raise ScenarioError(
                "model.unused", "the unused branch trains on contiguous blocks, one each step"
            )

    def steps_of(self, rank: int, world: int) -> int:
        """How many batches ``rank`` has."""
        return self.batches + (self.extra if rank == world - 1 else 0)

    @property
    def steps(self) -> int:
        return self.batches + self.extra
