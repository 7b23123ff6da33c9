"""Sharded training (``[sharded]``): the spec, what each rank should hold by the formulas, and
the record of what the ranks reported. Pure model layer.

One run trains the same small model on the same rows three ways, in lockstep: plain DDP; DDP
with ``ZeroRedundancyOptimizer`` around Adam (ZeRO-1: each rank keeps the Adam state of the
parameters it owns); FSDP2's ``fully_shard`` on every Linear and on the root (parameters,
gradients and Adam state sharded by rows).

The formulas follow torch 2.13's source, not the papers' ideal ``÷ N``:

* ``ZeroRedundancyOptimizer._partition_parameters`` hands out *whole* parameters, largest
  first, each to the rank that holds the fewest values so far (the first such rank).
* FSDP2 shards each parameter on dim 0 with ``torch.chunk``: rank r holds rows
  ``[r·c, min((r+1)·c, d0))`` with ``c = ceil(d0 / N)`` (a rank past the end holds none).
* Adam keeps ``exp_avg`` and ``exp_avg_sq`` (the parameter's size each) and a float32 ``step``
  scalar (4 bytes) per parameter it steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ddp_viz.kinds.sharded.events import ShardedCollective, ShardedStep
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.event_base import Event
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import rate, wholes

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario
    from ddp_viz.model.timeline import RunRecord

KIND = "sharded"
KEYS = ("steps", "width", "batch", "lr", "seed")
FEATURES = 16  # Linear(16, width) → tanh → Linear(width, width) → tanh → Linear(width, OUT)
OUT = 8
LAYERS = ("inp", "hidden", "out")
FLOAT = 4  # float32
STEP_BYTES = 4  # Adam's ``step``: a float32 scalar per parameter
# the float tolerance of the checks: ZeRO and FSDP against plain DDP, after every step
PARAM_TOL = 1e-5
GRAD_TOL = 1e-6


class Way(Enum):
    DDP = "ddp"
    ZERO = "zero"
    FSDP = "fsdp"

    @property
    def label(self) -> str:
        return {"ddp": "DDP", "zero": "DDP + ZeRO-1", "fsdp": "FSDP2"}[self.value]


WAYS = tuple(Way)
WHAT = ("params", "grads", "state")  # what a rank holds, in bytes


@dataclass(frozen=True)
class ShardedSpec:
    """``steps`` Adam steps of ``batch`` rows a rank, the same rows for every way; a
    ``width``-wide two-hidden-layer MLP from ``seed``."""

    steps: int = 4
    width: int = 64
    batch: int = 8
    lr: float = 0.01
    seed: int = 0

    trains: ClassVar[bool] = False  # the program trains its own model

    @classmethod
    def from_mapping(cls, data: Any) -> ShardedSpec:
        table = spec_table(data, KIND, KEYS)
        v: dict[str, Any] = wholes(
            table,
            KIND,
            (("steps", 1, 200), ("width", 8, 512), ("batch", 1, 256), ("seed", 0, 2**31 - 1)),
        )
        if "lr" in table:
            v["lr"] = rate(f"{KIND}.lr", table["lr"], 1)
        return cls(**v)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}

    def fixed_steps(self, world: int) -> int:
        return self.steps

    def check_scenario(self, s: Scenario) -> None:
        if s.world_size < 2:
            raise ScenarioError("world_size", "sharding needs at least 2 ranks")
        if s.steps != self.steps:
            raise ScenarioError("steps", f"[{KIND}] steps sets the run's length; leave steps out")

    def shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """The parameters in order of definition (``model.parameters()``'s order)."""
        w = self.width
        return [
            ("inp.weight", (w, FEATURES)),
            ("inp.bias", (w,)),
            ("hidden.weight", (w, w)),
            ("hidden.bias", (w,)),
            ("out.weight", (OUT, w)),
            ("out.bias", (OUT,)),
        ]

    def numels(self) -> dict[str, int]:
        return {n: math.prod(s) for n, s in self.shapes()}


def layer_of(name: str) -> str:
    return name.split(".")[0]


def chunk_rows(d0: int, world: int, rank: int) -> tuple[int, int]:
    """FSDP2's rows of a dim-0 size ``d0`` on ``rank``: (first row, how many)."""
    c = -(-d0 // world)
    first = min(rank * c, d0)
    return first, max(0, min(c, d0 - rank * c))


def zero_owners(spec: ShardedSpec, world: int) -> dict[str, int]:
    """The rank ``ZeroRedundancyOptimizer`` gives each parameter: sorted by size, largest
    first (a stable sort), each to the first rank holding the fewest values so far."""
    sizes = [0] * world
    owners = {}
    for name, n in sorted(spec.numels().items(), key=lambda kv: kv[1], reverse=True):
        rank = sizes.index(min(sizes))
        owners[name] = rank
        sizes[rank] += n
    return owners


def owned_rows(spec: ShardedSpec, way: Way, world: int, rank: int) -> dict[str, tuple[int, int]]:
    """Per parameter, the rows whose optimizer state ``rank`` keeps (FSDP: also the rows of the
    parameter and gradient it holds)."""
    out = {}
    owners = zero_owners(spec, world)
    for name, shape in spec.shapes():
        if way is Way.FSDP:
            out[name] = chunk_rows(shape[0], world, rank)
        elif way is Way.ZERO:
            out[name] = (0, shape[0]) if owners[name] == rank else (0, 0)
        else:
            out[name] = (0, shape[0])
    return out


def expected_bytes(spec: ShardedSpec, way: Way, world: int, rank: int) -> dict[str, int]:
    """What the formulas say ``rank`` holds after a step: parameters, gradients, Adam state."""
    numels, shapes = spec.numels(), dict(spec.shapes())
    full = FLOAT * sum(numels.values())
    owned = owned_rows(spec, way, world, rank)
    values = {n: rows * numels[n] // shapes[n][0] for n, (_, rows) in owned.items()}
    if way is Way.DDP:
        state = 2 * full + STEP_BYTES * len(numels)
        return {"params": full, "grads": full, "state": state}
    mine = FLOAT * sum(values.values())
    if way is Way.ZERO:
        stepped = sum(1 for n in values if values[n])
        return {"params": full, "grads": full, "state": 2 * mine + STEP_BYTES * stepped}
    return {"params": mine, "grads": mine, "state": 2 * mine + STEP_BYTES * len(numels)}


def ideal_bytes(spec: ShardedSpec, way: Way, world: int) -> dict[str, float]:
    """The papers' formulas: ZeRO-1 divides the optimizer state by N, FSDP (ZeRO-3) divides
    parameters, gradients and state by N (the step scalars left aside)."""
    full = FLOAT * sum(spec.numels().values())
    if way is Way.DDP:
        return {"params": full, "grads": full, "state": 2 * full}
    if way is Way.ZERO:
        return {"params": full, "grads": full, "state": 2 * full / world}
    return {"params": full / world, "grads": full / world, "state": 2 * full / world}


def layer_bytes(spec: ShardedSpec) -> dict[str, int]:
    """Each layer's weight and bias, whole, in bytes: what FSDP all-gathers for it."""
    out: dict[str, int] = {}
    for name, n in spec.numels().items():
        out[layer_of(name)] = out.get(layer_of(name), 0) + FLOAT * n
    return out


def ring_sent(op: str, full_bytes: int, world: int) -> float:
    """Bytes one rank sends on a ring for ``op`` over a tensor of ``full_bytes`` (whole):
    reduce-scatter and all-gather (N−1)/N each; all-reduce both, 2 (N−1)/N."""
    share = full_bytes * (world - 1) / world
    return 2 * share if op == "all_reduce" else share


@dataclass
class ShardedRecord:
    """What the ranks reported: ``steps[(way, step)][rank]`` and
    ``collectives[(way, step)][rank]`` (in the order the rank issued them)."""

    steps: dict[tuple[str, int], dict[int, ShardedStep]] = field(default_factory=dict)
    collectives: dict[tuple[str, int], dict[int, list[ShardedCollective]]] = field(
        default_factory=dict
    )

    def apply(self, event: Event) -> None:
        # by its word, not its class: a kind folder loaded again redefines its classes
        if event.kind == "sharded_step":
            e = cast(ShardedStep, event)
            self.steps.setdefault((e.way, e.step), {})[e.rank] = e
        elif event.kind == "sharded_collective":
            c = cast(ShardedCollective, event)
            ranks = self.collectives.setdefault((c.way, c.step), {})
            calls = ranks.setdefault(c.rank, [])
            calls.append(c)
            calls.sort(key=lambda e: e.seq)

    def complete(self, world: int) -> int:
        """Leading steps every rank reported for every way."""
        n = 0
        while all(len(self.steps.get((w.value, n), {})) == world for w in WAYS):
            n += 1
        return n

    def at(self, way: str, step: int) -> dict[int, ShardedStep]:
        return self.steps.get((way, step), {})

    def calls(self, way: str, step: int, rank: int = 0) -> list[ShardedCollective]:
        return self.collectives.get((way, step), {}).get(rank, [])

    def held(self, way: str, step: int, rank: int, what: str) -> int | None:
        e = self.at(way, step).get(rank)
        return None if e is None else int(getattr(e, what))


def spec_of(rec: RunRecord) -> ShardedSpec:
    return ShardedSpec.from_mapping(rec.scenario.get(KIND, {}))


def complete_steps(rec: RunRecord) -> int:
    return rec.parts[KIND].complete(rec.world_size)


DDPS = "DDP's"  # what ZeRO-1's and FSDP2's numbers are held against


def within(diff: float, of: str = "") -> str:
    """How far from ``of`` (DDP's), in words: "equal to DDP's" for no difference at all
    (never "within 0e+00"), else "within 3e-08 of DDP's"; without ``of``, "exactly equal" or
    "within 3e-08"."""
    if diff == 0:
        return f"equal to {of}" if of else "exactly equal"
    return f"within {diff:.0e}" + (f" of {of}" if of else "")
