"""How the ranks find each other (``[launch]``). Pure model layer.

``init_method = "file"`` (every lesson's default): a ``FileStore`` in a private per-run folder,
with nothing to choose or collide. ``"env"``: the way ``torchrun`` starts a script. The
engine plays the launcher: rank 0 opens a ``TCPStore`` on a port the kernel picks, and every
rank gets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT`` (and ``TORCHELASTIC_USE_AGENT_STORE``, as torchrun sets it) in its
environment, then calls ``init_process_group("gloo", init_method="env://")``, which reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.event_base import Event
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import choice

if TYPE_CHECKING:
    from ddp_viz.model.timeline import RunRecord

KEYS = ("init_method",)
INIT_METHODS = ("file", "env")


@dataclass(frozen=True)
class LaunchSpec:
    init_method: str = "file"

    @classmethod
    def from_mapping(cls, data: Any) -> LaunchSpec:
        table = spec_table(data, "launch", KEYS)
        return cls(choice("launch.init_method", table.get("init_method", "file"), INIT_METHODS))

    def to_dict(self) -> dict[str, Any]:
        return {"init_method": self.init_method}


@dataclass(frozen=True)
class LaunchEnv(Event):
    """The variables a launcher such as ``torchrun`` sets, as the rank read them when
    ``init_process_group`` used them (``init_method``: ``env://`` or ``file://``)."""

    kind: ClassVar[str] = "launch_env"
    run: int
    rank: int
    init_method: str
    env: dict[str, str]


def launch_line(rec: RunRecord) -> str:
    """The launch variables every rank read, in one line (empty unless env:// was used)."""
    launch = rec.launch
    if not launch:
        return ""
    first = launch[min(launch)]
    own = ("RANK", "LOCAL_RANK")
    shared = " ".join(f"{k}={v}" for k, v in first.env.items() if k not in own)
    per_rank = "; ".join(
        f"rank {r}: " + " ".join(f"{k}={v}" for k, v in ev.env.items() if k in own)
        for r, ev in sorted(launch.items())
    )
    return f"launched with init_method={first.init_method} · {shared} · {per_rank}"
