"""How DDP's bucket all-reduces overlap backward, from one rank's recorded step (pure).

Backward computes gradients from the last layer to the first; DDP launches a bucket's
all-reduce as soon as every gradient in it is ready, so communication runs while backward is
still computing. These functions measure that from the ``timing`` event's ``ready`` ticks and
bucket spans.
"""

from __future__ import annotations

from dataclasses import dataclass

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
