"""How DDP's bucket all-reduces overlap backward, from one rank's recorded step (pure).

Backward computes gradients from the last layer to the first; DDP launches a bucket's
all-reduce as soon as every gradient in it is ready, so communication runs while backward is
still computing. These functions measure that from the ``timing`` event's ``ready`` ticks and
bucket spans.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from ddp_viz.kinds.bucket_timeline.record import backward_cost
from ddp_viz.model.timeline import RankStep, RunRecord


@dataclass(frozen=True)
class Overlap:
    backward: tuple[float, float]  # loss.backward() started / returned
    last_ready: float  # the last gradient became ready: backward's computation is over
    allreduce_s: float  # total time of the buckets' all-reduces
    hidden_s: float  # the part of it that ran while gradients were still being computed

    @property
    def fraction(self) -> float:
        return self.hidden_s / self.allreduce_s if self.allreduce_s > 0 else 0.0


def overlap(rs: RankStep) -> Overlap | None:
    """The overlap of one rank's step, or None when the step carries no bucket timings."""
    backward = rs.spans.get("backward")
    spans = [b for b in rs.bucket_spans if b.get("finished") is not None]
    if not backward or not spans or not rs.ready:
        return None
    start, end = backward[0]
    last_ready = max(float(t) for _, t in rs.ready)
    total = sum(b["finished"] - b["launched"] for b in spans)
    hidden = sum(
        max(0.0, min(b["finished"], last_ready) - max(b["launched"], start)) for b in spans
    )
    return Overlap((start, end), last_ready, total, hidden)


def layouts(record: RunRecord) -> list[list[list[str]]]:
    """The bucket layout (parameter names per bucket, in bucket order) of each step, rank 0."""
    out = []
    for st in record.steps:
        rs = st.ranks.get(0)
        if rs is None or not rs.bucket_spans:
            out.append([])
            continue
        out.append([list(b["params"]) for b in sorted(rs.bucket_spans, key=lambda b: b["index"])])
    return out


def ready_order(rs: RankStep) -> list[str]:
    """Parameter names in the order their gradients became ready."""
    return [str(name) for name, _ in sorted(rs.ready, key=lambda item: item[1])]


@dataclass(frozen=True)
class BackwardLoss:
    """What the overlapped all-reduces cost one rank's backward (``[train] overlap_cost``),
    medians over the passes timed after the run: from backward's start to its last gradient
    (``compute``) and to its return (``total``), with DDP's all-reduces (``synced``) and under
    ``no_sync()``, with none (``alone``)."""

    rank: int
    passes: int
    compute_synced_s: float
    compute_alone_s: float
    total_synced_s: float
    total_alone_s: float

    @property
    def lost_s(self) -> float:
        """How much longer computing the gradients took with the all-reduces beside it."""
        return self.compute_synced_s - self.compute_alone_s


def backward_loss(record: RunRecord, rank: int) -> BackwardLoss | None:
    cost = backward_cost(record, rank)
    if cost is None or not cost.synced or not cost.alone:
        return None

    def med(spans: list[list[float]], end: int) -> float:
        return median(s[end] - s[0] for s in spans)

    return BackwardLoss(
        rank,
        min(len(cost.synced), len(cost.alone)),
        med(cost.synced, 1),
        med(cost.alone, 1),
        med(cost.synced, 2),
        med(cost.alone, 2),
    )


def hidden_per_step(record: RunRecord, rank: int) -> tuple[float, float, list[int]] | None:
    """Medians of the all-reduce time and of its hidden part per step, over the steps after
    the first (step 1's single bucket is rebuilt before step 2), and which steps (1-based)."""
    found = [
        (i + 1, o)
        for i, st in enumerate(record.steps)
        if i > 0 and rank in st.ranks and (o := overlap(st.ranks[rank])) is not None
    ]
    if not found:
        return None
    steps = [n for n, _ in found]
    return median(o.allreduce_s for _, o in found), median(o.hidden_s for _, o in found), steps


def overlap_lines(record: RunRecord, rank: int = 0) -> list[str]:
    """The time overlap hid and the time backward lost, on ``rank``, in the run's numbers."""
    loss = backward_loss(record, rank)
    if loss is None:
        return []
    out = []
    hidden = hidden_per_step(record, rank)
    if hidden is not None:
        total, hid, steps = hidden
        which = f"medians, steps {steps[0]}–{steps[-1]}" if len(steps) > 1 else f"step {steps[0]}"
        out.append(
            f"overlap, rank {rank}: the buckets' all-reduces took {total * 1e3:.2f} ms a step "
            f"(launch to result, summed), {hid * 1e3:.2f} ms of it hidden behind backward's "
            f"computation ({which})"
        )
    out.append(
        f"what backward lost, rank {rank}: from its start to the last gradient "
        f"{loss.compute_synced_s * 1e3:.2f} ms with DDP's all-reduces, "
        f"{loss.compute_alone_s * 1e3:.2f} ms under no_sync() with none "
        f"({loss.lost_s * 1e3:+.2f} ms); it returned after {loss.total_synced_s * 1e3:.2f} ms "
        f"against {loss.total_alone_s * 1e3:.2f} ms (medians of {loss.passes} alternating "
        "passes after the run, no optimizer step)"
    )
    return out


def report_lines(record: RunRecord) -> list[str]:
    """The text report's lines about overlap, after the steps (none unless it was measured)."""
    lines = overlap_lines(record)
    return [*lines, ""] if lines else []
