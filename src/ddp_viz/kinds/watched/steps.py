"""A watched step read closely (pure): each bucket's all-reduce on its own, who waited how long
on average, each rank's step times, every tensor's gradient norms, and how long the training
itself took. What the watched page and its tables show; every number is a recorded one.

Times are the listener's clock (see :mod:`ddp_viz.kinds.watched.run`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddp_viz.kinds.watched import history as watched_history
from ddp_viz.kinds.watched.agree import averages_identical
from ddp_viz.model.arrivals import last_to_arrive
from ddp_viz.model.step_memo import rank_norms
from ddp_viz.model.tensors import is_summary
from ddp_viz.model.timeline import RunRecord, StepRecord


@dataclass(frozen=True)
class BucketTime:
    """One bucket's all-reduce in one step, on every rank that reported it."""

    index: int
    params: tuple[str, ...]
    bytes: int
    launched: dict[int, float]  # rank -> when the bucket reached its comm hook
    finished: dict[int, float]  # rank -> when the rank read its average

    @property
    def last(self) -> int:
        """The rank that launched this bucket last: the all-reduce began when it did."""
        return max(self.launched, key=lambda r: (self.launched[r], r))

    @property
    def waited_s(self) -> float:
        """How long the first rank to launch it waited for the last one."""
        return max(self.launched.values()) - min(self.launched.values())

    @property
    def own_s(self) -> float:
        """The all-reduce itself, waiting left out: on the rank that launched it last (it
        waited for no one), from its launch to its average."""
        r = self.last
        return self.finished[r] - self.launched[r]


def bucket_times(st: StepRecord) -> list[BucketTime]:
    """The step's buckets by index, each with every rank's launch and finish."""
    found: dict[int, BucketTime] = {}
    for r, rs in sorted(st.ranks.items()):
        for b in rs.bucket_spans:
            if b.get("launched") is None or b.get("finished") is None:
                continue
            i = int(b["index"])
            bt = found.get(i)
            if bt is None:
                bt = found[i] = BucketTime(i, tuple(b.get("params", ())), int(b["bytes"]), {}, {})
            bt.launched[r], bt.finished[r] = b["launched"], b["finished"]
    return [found[i] for i in sorted(found)]


def size_text(n: int) -> str:
    """Bytes as a person reads them: 216 B, 1.5 KiB, 25.0 MiB."""
    if n < 1024:
        return f"{n} B"
    if n < 1024**2:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024**2:.1f} MiB"


@dataclass(frozen=True)
class Straggler:
    """How often a rank was the last to reach the all-reduce, and how long the others waited
    for it then, on average: a rank last 277 times by 0.2 ms is noise, by 25 ms a straggler."""

    rank: int
    count: int
    mean_wait_s: float


def stragglers_with_waits(rec: RunRecord, upto: int, first: int = 0) -> list[Straggler]:
    """Each rank that was last in steps first..upto, most often first (a watched record's
    from its history, which outlives the steps it thins)."""
    part = rec.parts.get(watched_history.HISTORY)
    if isinstance(part, watched_history.History):
        got = part.stragglers(upto, first)
        found = [Straggler(r, int(n), total / n) for r, (n, total) in got.items()]
        return sorted(found, key=lambda s: (-s.count, s.rank))
    waits: dict[int, list[float]] = {}
    for st in rec.steps[first : upto + 1]:
        found = last_to_arrive(st, rec.world_size)
        if found is not None:
            waits.setdefault(found[0], []).append(found[1])
    out = [Straggler(r, len(w), sum(w) / len(w)) for r, w in waits.items()]
    return sorted(out, key=lambda s: (-s.count, s.rank))


def _forward_at(rec: RunRecord, step: int, rank: int) -> float | None:
    if not 0 <= step < len(rec.steps):
        return None
    rs = rec.steps[step].ranks.get(rank)
    spans = rs.spans.get("forward") if rs else None
    return spans[0][0] if spans else None


def latest_step_time(rec: RunRecord, step: int, rank: int) -> float | None:
    """The rank's latest whole step as of ``step``: from this step's forward to the next's,
    or, for the newest step (no next forward yet), the one before it."""
    for s in (step, step - 1):
        a, b = _forward_at(rec, s, rank), _forward_at(rec, s + 1, rank)
        if a is not None and b is not None:
            return b - a
    return None


def mean_step_time(rec: RunRecord, step: int, rank: int) -> float | None:
    """The rank's mean step time from its first forward to its latest one up to ``step + 1``."""
    last = min(step + 1, len(rec.steps) - 1)
    while last > 0 and _forward_at(rec, last, rank) is None:
        last -= 1
    a, b = _forward_at(rec, 0, rank), _forward_at(rec, last, rank)
    return None if a is None or b is None or last == 0 else (b - a) / last


def typical_step_s(rec: RunRecord, upto: int) -> float | None:
    """The median over ranks of each rank's mean step time, forward to forward, from step 2
    (step 1's one-off costs left out) to its latest forward up to ``upto``."""
    last = min(upto, len(rec.steps) - 1)
    means = []
    for r in range(rec.world_size):
        end = last
        while end > 1 and _forward_at(rec, end, r) is None:
            end -= 1
        a, b = _forward_at(rec, 1, r), _forward_at(rec, end, r)
        if a is not None and b is not None and end > 1:
            means.append((b - a) / (end - 1))
    means.sort()
    return means[len(means) // 2] if means else None


def training_span(rec: RunRecord) -> float | None:
    """From the first forward of any rank to the last all-reduce: the training the watch saw,
    without the launcher's start-up (torchrun, imports, process groups) nor its teardown."""
    starts, ends = [], []
    for st in rec.steps:
        for rs in st.ranks.values():
            starts += [s[0] for s in rs.spans.get("forward", [])]
            ends += [b["finished"] for b in rs.bucket_spans if b.get("finished") is not None]
    if not starts or not ends:
        return None
    return max(ends) - min(starts)


@dataclass(frozen=True)
class TensorRow:
    """One tensor of a step captured in full: its local gradient's norm on every rank, the
    average's, how far the ranks' norms spread, and whether the average is the same on all."""

    name: str
    shape: tuple[int, ...]
    bucket: int | None
    local: dict[int, float]
    averaged: float
    spread: float  # max - min of the ranks' local norms
    identical: bool | None


def _same(values: list[object]) -> bool | None:
    if any(v is None for v in values):
        return None
    first = values[0]
    for v in values[1:]:
        if is_summary(first) or is_summary(v):
            a = first.get("digest") if is_summary(first) else None  # type: ignore[union-attr]
            b = v.get("digest") if is_summary(v) else None  # type: ignore[union-attr]
            if a is None or a != b:
                return False
        elif v != first:
            return False
    return True


def tensor_rows(rec: RunRecord, st: StepRecord) -> list[TensorRow]:
    """Every parameter's row at a step captured in full, in the model's order (computed once
    per step's values; the Run tab's table)."""
    return st.memoized("tensor_rows", lambda: _TensorRows(rec, st).rows(rec.param_names))


def telling_rows(rec: RunRecord, st: StepRecord, n: int) -> list[TensorRow]:
    """The ``n`` rows :func:`most_telling` would pick of every tensor's, but only those built:
    the stage shows 8 of a transformer's 198 tensors, and building all 198 rows (on 8 ranks)
    held the frame that first drew a step captured in full. The order is ranked from the
    norms the record computed as each rank's gradients arrived."""
    return st.memoized(f"telling_rows.{n}", lambda: _TensorRows(rec, st).telling(n))


class _TensorRows:
    """One step's inputs to its rows, gathered once: each rank's norms, the buckets."""

    def __init__(self, rec: RunRecord, st: StepRecord) -> None:
        self.st, self.ranks = st, sorted(st.ranks)
        self.norms = {r: rank_norms(st, r, "local") for r in self.ranks}
        self.avg_norms = rank_norms(st, self.ranks[0], "averaged") if self.ranks else {}
        self.where = {n: bt.index for bt in bucket_times(st) for n in bt.params}
        self.shapes = {p.name: tuple(p.shape) for p in rec.params}
        self.names = rec.param_names

    def _local(self, name: str) -> tuple[dict[int, float], float]:
        local = {r: self.norms[r].get(name, math.nan) for r in self.ranks}
        finite = [v for v in local.values() if math.isfinite(v)]
        return local, (max(finite) - min(finite) if finite else math.nan)

    def _same(self, name: str) -> tuple[list[object], bool | None]:
        avgs = [(self.st.ranks[r].averaged or {}).get(name) for r in self.ranks]
        return avgs, _same(avgs)

    def row(self, name: str) -> TensorRow:
        local, spread = self._local(name)
        avgs, same = self._same(name)
        avg = self.avg_norms.get(name, math.nan) if avgs else math.nan
        return TensorRow(name, self.shapes.get(name, ()), self.where.get(name), local, avg,
                         spread, same)  # fmt: skip

    def rows(self, names: list[str]) -> list[TensorRow]:
        return [self.row(name) for name in names]

    def telling(self, n: int) -> list[TensorRow]:
        """most_telling's key, from the norms and (only when the averages are not all
        identical) each tensor's averages: no row is built for a tensor not shown."""
        all_same = averages_identical(self.st) is True

        def key(name: str) -> tuple[bool, float]:
            spread = self._local(name)[1]
            differ = not all_same and self._same(name)[1] is False
            return (not differ, -spread if math.isfinite(spread) else 1.0)

        return self.rows(sorted(self.names, key=key)[:n])


def most_telling(rows: list[TensorRow], n: int) -> list[TensorRow]:
    """The ``n`` rows that matter most: averages that differ between ranks first, then the
    widest spread of the ranks' local norms (where the ranks' data pulled apart most)."""

    def key(row: TensorRow) -> tuple[bool, float]:
        spread = row.spread if math.isfinite(row.spread) else -1.0
        return (row.identical is not False, -spread)

    return sorted(rows, key=key)[:n]


def gradient_norms(st: StepRecord) -> tuple[dict[int, float], float | None]:
    """The whole model's gradient norm on each rank (local) and of the average: one number
    per rank for a step captured in full, however many tensors the model has."""
    return st.memoized("gradient_norms", lambda: _gradient_norms(st))


def _gradient_norms(st: StepRecord) -> tuple[dict[int, float], float | None]:
    local = {}
    for r, rs in st.ranks.items():
        if rs.local:
            local[r] = math.sqrt(sum(v**2 for v in rank_norms(st, r, "local").values()))
    avg = next((r for r, rs in st.ranks.items() if rs.averaged), None)
    if avg is None:
        return local, None
    return local, math.sqrt(sum(v**2 for v in rank_norms(st, avg, "averaged").values()))


def watched_elapsed(rec: RunRecord) -> str:
    """How long a watched run took, for its status line: the training the ranks reported,
    and the whole command's time (the launcher's start-up and teardown too) named as such."""
    span = training_span(rec)
    whole = rec.elapsed_s
    if span is None:
        return f" in {whole:.3f} s (the whole command)" if whole is not None else ""
    with_launch = f" ({whole:.2f} s with the launcher's start-up)" if whole is not None else ""
    return f" in {span:.3f} s of training{with_launch}"
