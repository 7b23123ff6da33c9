"""Plain-text report of a collective run (``[collective]``), for the headless CLI."""

from __future__ import annotations

from typing import Any

from ddp_viz.kinds.collective.model import (
    CollectiveSpec,
    naive_bytes_sent,
    ring_bytes_sent,
    ring_steps,
)
from ddp_viz.model.report import rank_pids
from ddp_viz.model.tensors import is_summary, tensor_sample
from ddp_viz.model.timeline import RunRecord, RunStatus


def _values(v: object, most: int = 12) -> str:
    sample = tensor_sample(v)  # type: ignore[arg-type]
    shown = ", ".join(f"{x:g}" for x in sample[:most])
    if is_summary(v):  # a long vector: its first values and how many there are
        return f"[{shown}, …] ({v['shape'][0]:,} values)"  # type: ignore[index]
    return f"[{shown}{', …' if len(sample) > most else ''}]"


def collective_report(rec: RunRecord) -> str:
    col = rec.parts["collective"]
    world = rec.world_size
    # the spec as the run read it: a table without ``length`` ran the default, not 0 values
    length = CollectiveSpec.from_mapping(rec.scenario["collective"]).length
    pids = rank_pids(rec)
    out = [
        f"all-reduce run {rec.run}: {world} ranks over gloo, {length} values each, "
        f"rank pids {pids}",
        "",
    ]
    for r in sorted(col.inputs):
        event = col.inputs[r]
        out.append(f"rank {r} holds {_values(event.values)}")
    out += ["", f"ring: {ring_steps(world)} steps (chunk numbers from 0)"]
    for s in sorted(col.steps):
        for r, m in sorted(col.steps[s].items()):
            verb = "adds in" if m.phase == "reduce_scatter" else "copies"
            out.append(
                f"  step {s + 1} {m.phase.replace('_', '-'):<14} rank {r}: sends chunk {m.sent} "
                f"to rank {m.to}, {verb} chunk {m.received} from rank {m.source}, "
                f"now {_values(m.chunk, 6)}"
            )
    head = f"{'rank':>4}  {'algorithm':<15} {'bytes sent':>11} {'formula':>8}  = dist.all_reduce"
    out += ["", head, "-" * len(head)]
    for r in range(world):
        for algo in ("naive", "ring", "all_reduce"):
            result = col.results.get((algo, r))
            if result is None:
                continue
            formula = {
                "naive": naive_bytes_sent(length, world, r),
                "ring": ring_bytes_sent(length, world, r),
            }.get(algo)
            sent = f"{result.bytes_sent:,}" if algo != "all_reduce" else "(gloo)"
            same = col.equal(algo, r)
            check = ("✓" if same else "✗") if algo != "all_reduce" else "(the reference)"
            out.append(
                f"{r:>4}  {algo:<15} {sent:>11} {'' if formula is None else f'{formula:,}':>8}  "
                f"{check}"
            )
    if col.timings:
        out += ["", "time of one all-reduce, median of the slowest rank:"]
        for t in col.timings:
            out.append(f"  {t.algo:<10} {t.length:>10,} values  {t.seconds * 1000:8.2f} ms")
    agree = col.agree(world)
    if rec.status is RunStatus.FINISHED:
        verdict = (
            "✓ naive and ring equal dist.all_reduce on every rank"
            if agree
            else ("✗ a hand-made result differs from dist.all_reduce")
        )
        out += ["", f"finished in {rec.elapsed_s or 0:.3f} s: {verdict}"]
    else:
        out += ["", f"run {rec.status}: {rec.reason}"]
    return "\n".join(out)


def status_line(rec: RunRecord) -> str | None:
    """The status bar's line once the run finished."""
    if rec.status != RunStatus.FINISHED:
        return None
    agree = rec.parts["collective"].agree(rec.world_size)
    verdict = (
        "✓ naive and ring equal dist.all_reduce on every rank"
        if agree
        else "✗ a hand-made all-reduce differs from dist.all_reduce"
    )
    return f"Run {rec.run} finished: all-reduce on {rec.world_size} rank(s). {verdict}."


def trace_spans(record: RunRecord) -> list[dict[str, Any]]:
    """Ring and naive steps of a ``[collective]`` run, one span per rank and step."""
    col = record.parts.get("collective")
    if col is None:
        return []
    out = []
    for s, moves in sorted(col.steps.items()):
        for r, m in sorted(moves.items()):
            out.append(
                {
                    "rank": r,
                    "cat": "ring",
                    "name": f"ring {s + 1}: chunk {m.sent} → rank {m.to}",
                    "start": m.started,
                    "end": m.finished,
                    "args": {"phase": m.phase, "received": m.received, "bytes": m.bytes_sent},
                }
            )
    for s, moves in sorted(col.naive.items()):
        for r, m in sorted(moves.items()):
            what = "to rank 0" if s == 0 else "the sum back"
            out.append(
                {
                    "rank": r,
                    "cat": "naive",
                    "name": f"naive: {what}",
                    "start": m.started,
                    "end": m.finished,
                    "args": {"sent": m.bytes_sent, "received": m.bytes_received},
                }
            )
    return out
