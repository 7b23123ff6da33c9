"""The all-reduce itself (``[collective]``): naive and ring all-reduce by hand, against
``dist.all_reduce``. Pure model layer: the spec, the ring's schedule and the byte counts it
implies, and the record of what the ranks reported.

A ring all-reduce over N ranks cuts the vector into N chunks (sizes as ``torch.tensor_split``
makes them: the first ``length % N`` chunks one value longer). In reduce-scatter step s
(0 … N−2) rank r sends chunk (r − s) mod N to rank r + 1 and adds the chunk (r − s − 1) mod N
it receives from rank r − 1 into its own; after N − 1 steps rank r holds the whole sum of
chunk (r + 1) mod N. In all-gather step s it sends chunk (r + 1 − s) mod N on and copies the
chunk (r − s) mod N it receives. The engine follows this schedule with point-to-point sends;
the scene and the tests read the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import whole

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario

KEYS = ("length", "seed", "sweep", "repeats")
ALGORITHMS = ("naive", "ring", "all_reduce")
MAX_LENGTH = 4_000_000
BYTES_PER_VALUE = 4  # float32
REDUCE_SCATTER, ALL_GATHER = "reduce_scatter", "all_gather"


@dataclass(frozen=True)
class CollectiveSpec:
    """``length`` values per rank (whole numbers from ``seed``, so every order of adding gives
    the same bits); ``sweep``: vector lengths timed for the speed chart, each ``repeats``
    times."""

    length: int = 8
    seed: int = 0
    sweep: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    repeats: int = 3

    @classmethod
    def from_mapping(cls, data: Any) -> CollectiveSpec:
        table = spec_table(data, "collective", KEYS)
        values: dict[str, Any] = {}
        if "length" in table:
            values["length"] = whole("collective.length", table["length"], 1, MAX_LENGTH)
        if "seed" in table:
            values["seed"] = whole("collective.seed", table["seed"], 0, 2**31 - 1)
        if "repeats" in table:
            values["repeats"] = whole("collective.repeats", table["repeats"], 1, 20)
        if "sweep" in table:
            sweep = table["sweep"]
            if not isinstance(sweep, list | tuple) or len(sweep) > 8:
                raise ScenarioError("collective.sweep", "must be a list of up to 8 lengths")
            values["sweep"] = tuple(
                whole(f"collective.sweep[{i}]", n, 1, MAX_LENGTH) for i, n in enumerate(sweep)
            )
        return cls(**values)

    def check(self, world: int) -> None:
        """Rules that need the world size: every chunk holds at least one value."""
        if self.length < world:
            raise ScenarioError(
                "collective.length",
                f"{world} ranks cut the vector into {world} chunks: it needs at least {world} "
                f"values, got {self.length}",
            )

    # the all-reduce trains nothing: the rows and [data] / [train] go unused
    trains: ClassVar[bool] = False

    def fixed_steps(self, world: int) -> int:
        """The ring's steps are the run's."""
        return max(1, ring_steps(world))

    def check_scenario(self, s: Scenario) -> None:
        if s.world_size < 2:
            raise ScenarioError("world_size", "an all-reduce needs at least 2 ranks")
        self.check(s.world_size)
        if s.steps != ring_steps(s.world_size):
            raise ScenarioError(
                "steps",
                f"a ring all-reduce over {s.world_size} ranks takes {ring_steps(s.world_size)} "
                "steps; leave steps out",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "seed": self.seed,
            "sweep": list(self.sweep),
            "repeats": self.repeats,
        }


def ring_steps(world: int) -> int:
    """Steps of a ring all-reduce: N − 1 to reduce-scatter, N − 1 to all-gather."""
    return 2 * (world - 1)


def chunk_bounds(length: int, world: int) -> list[tuple[int, int]]:
    """[start, stop) of each of the ``world`` chunks, as ``torch.tensor_split`` cuts them."""
    base, extra = divmod(length, world)
    out, start = [], 0
    for c in range(world):
        stop = start + base + (1 if c < extra else 0)
        out.append((start, stop))
        start = stop
    return out


@dataclass(frozen=True)
class Move:
    """What one rank does in one ring step."""

    phase: str
    send: int  # chunk index sent to rank + 1
    to: int
    receive: int  # chunk index received from rank − 1
    source: int


def ring_move(step: int, rank: int, world: int) -> Move:
    """The schedule: which chunk ``rank`` sends and receives in ring step ``step``."""
    to, source = (rank + 1) % world, (rank - 1) % world
    if step < world - 1:
        return Move(REDUCE_SCATTER, (rank - step) % world, to, (rank - step - 1) % world, source)
    s = step - (world - 1)
    return Move(ALL_GATHER, (rank + 1 - s) % world, to, (rank - s) % world, source)


def ring_bytes_sent(length: int, world: int, rank: int) -> int:
    """Bytes ``rank`` sends in a ring all-reduce: every chunk but one in each half, about
    2 (N − 1) / N of the vector."""
    bounds = chunk_bounds(length, world)
    values = sum(
        bounds[ring_move(s, rank, world).send][1] - bounds[ring_move(s, rank, world).send][0]
        for s in range(ring_steps(world))
    )
    return values * BYTES_PER_VALUE


def naive_bytes_sent(length: int, world: int, rank: int) -> int:
    """Naive: every rank sends its vector to rank 0, which sends the sum back to each."""
    whole = length * BYTES_PER_VALUE
    return whole * (world - 1) if rank == 0 else whole


def contributions(step: int, rank: int, chunk: int, world: int) -> int:
    """How many ranks' values the copy of ``chunk`` on ``rank`` sums after ring step
    ``step`` (−1: before the first step)."""
    count = 1
    for s in range(step + 1):
        move = ring_move(s, rank, world)
        if move.receive != chunk:
            continue
        if move.phase == ALL_GATHER:
            return world
        count = contributions(s - 1, move.source, chunk, world) + 1
    return count


@dataclass
class CollectiveRecord:
    """What a collective run's ranks reported, by kind."""

    inputs: dict[int, Any] = field(default_factory=dict)  # rank -> CollectiveInput
    steps: dict[int, dict[int, Any]] = field(default_factory=dict)  # step -> rank -> RingStep
    naive: dict[int, dict[int, Any]] = field(default_factory=dict)  # step -> rank -> NaiveStep
    results: dict[tuple[str, int], Any] = field(default_factory=dict)  # (algo, rank) -> result
    timings: list[Any] = field(default_factory=list)  # CollectiveTiming, in arrival order

    def add(self, event: Any) -> None:
        """Fold in a collective_input, ring_step, naive_step or collective_result event."""
        kind = event.kind
        if kind == "collective_input":
            self.inputs[event.rank] = event
        elif kind == "ring_step":
            self.steps.setdefault(event.step, {})[event.rank] = event
        elif kind == "naive_step":
            self.naive.setdefault(event.step, {})[event.rank] = event
        elif kind == "collective_result":
            self.results[(event.algo, event.rank)] = event

    def apply(self, event: Any) -> None:
        if event.kind == "collective_timing":
            self.timings.append(event)
        else:
            self.add(event)

    def complete_steps(self, world: int) -> int:
        """Leading ring steps every rank has reported."""
        n = 0
        while len(self.steps.get(n, {})) == world:
            n += 1
        return n

    def agree(self, world: int) -> bool | None:
        """Did both hand-made all-reduces equal ``dist.all_reduce`` on every rank?"""
        mine = [self.equal(a, r) for a in ("naive", "ring") for r in range(world)]
        if any(m is None for m in mine):
            return None
        return all(mine)

    def equal(self, algo: str, rank: int) -> bool | None:
        """Did the rank's hand-made result equal its ``dist.all_reduce``? The engine's
        ``torch.equal`` said so, and the values recorded say so too, value for value (a
        recording whose numbers differ never reads ✓)."""
        mine = self.results.get((algo, rank))
        if mine is None:
            return None
        ref = self.results.get(("all_reduce", rank))
        return bool(mine.equal) and (ref is None or mine.values == ref.values)


@dataclass
class RingState:
    """Every rank's buffer after some ring step, chunk by chunk, as the ranks reported it:
    ``values[rank][chunk]`` (the first values of the chunk) and ``sums[rank][chunk]``, how
    many ranks' vectors that copy adds up."""

    values: list[list[list[float]]]
    sums: list[list[int]]


def ring_state(rec: CollectiveRecord, world: int, upto: int) -> RingState | None:
    """The buffers after ring step ``upto`` (−1: the inputs), folded from the events."""
    from ddp_viz.model.tensors import tensor_sample

    if len(rec.inputs) < world:
        return None
    values, sums = [], []
    for r in range(world):
        event = rec.inputs[r]
        if event.heads:  # a long vector travels as a summary: its chunks' first values
            values.append([list(h) for h in event.heads])
        else:
            whole = tensor_sample(event.values)
            values.append([whole[a:b] for a, b in event.chunks])
        sums.append([1] * world)
    for s in range(upto + 1):
        moves = rec.steps.get(s, {})
        before = [list(row) for row in sums]
        for r, move in moves.items():
            values[r][move.received] = tensor_sample(move.chunk)
            if move.phase == ALL_GATHER:
                sums[r][move.received] = world
            else:
                sums[r][move.received] = before[move.source][move.received] + 1
    return RingState(values, sums)
