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
from typing import Any

from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import choice

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
