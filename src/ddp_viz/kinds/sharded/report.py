"""Plain-text report of a sharded run (``[sharded]``), for the headless CLI, and the status
bar's line."""

from __future__ import annotations

from ddp_viz.kinds.sharded.model import (
    DDPS,
    GRAD_TOL,
    KIND,
    PARAM_TOL,
    WAYS,
    WHAT,
    ShardedRecord,
    complete_steps,
    expected_bytes,
    ideal_bytes,
    spec_of,
    within,
)
from ddp_viz.model.report import rank_pids, run_outcome
from ddp_viz.model.timeline import RunRecord, RunStatus

OPS = {"all_reduce": "AR", "broadcast": "BC", "all_gather": "AG", "reduce_scatter": "RS"}


def kb(n: float) -> str:
    return f"{n / 1000:.1f} kB" if n >= 1000 else f"{n:.0f} B"


def worst_diffs(part: ShardedRecord, n: int) -> tuple[float, float]:
    """The largest parameter and gradient difference from DDP, over every step, rank and way."""
    events = [e for s in range(n) for w in WAYS for e in part.at(w.value, s).values()]
    return (
        max((e.param_diff for e in events), default=0.0),
        max((e.grad_diff for e in events), default=0.0),
    )


def held_table(rec: RunRecord, step: int) -> list[str]:
    part: ShardedRecord = rec.parts[KIND]
    spec = spec_of(rec)
    world = rec.world_size
    head = f"{'way':<14} {'rank':>4} " + " ".join(f"{w:>10}" for w in WHAT) + f" {'gathered':>10}"
    out = [head, "-" * len(head)]
    for way in WAYS:
        ideal = ideal_bytes(spec, way, world)
        for rank in range(world):
            e = part.at(way.value, step).get(rank)
            if e is None:
                continue
            want = expected_bytes(spec, way, world, rank)
            marks = "" if all(getattr(e, w) == want[w] for w in WHAT) else "  ✗ formula"
            cells = " ".join(f"{getattr(e, w):>10,}" for w in WHAT)
            out.append(f"{way.label:<14} {rank:>4} {cells} {e.gathered:>10,}{marks}")
        out.append(f"{'  ideal ÷ N':<19} " + " ".join(f"{ideal[w]:>10,.0f}" for w in WHAT))
    return out


def calls_lines(rec: RunRecord, step: int) -> list[str]:
    part: ShardedRecord = rec.parts[KIND]
    out = []
    for way in WAYS:
        calls = part.calls(way.value, step, 0)
        text = ", ".join(
            f"{OPS[c.op]} {c.layer or 'all'} {kb(max(c.bytes_in, c.bytes_out))}" for c in calls
        )
        out.append(f"  {way.label:<14} {len(calls):>2}: {text}")
    return out


def sharded_report(rec: RunRecord) -> str:
    part: ShardedRecord = rec.parts[KIND]
    spec = spec_of(rec)
    n = complete_steps(rec)
    pids = rank_pids(rec)
    out = [
        f"sharded run {rec.run}: {rec.world_size} ranks over gloo, rank pids {pids}",
        f"model: Linear(16, {spec.width}) → tanh → Linear({spec.width}, {spec.width}) → tanh → "
        f"Linear({spec.width}, 8); Adam lr {spec.lr:g}; {spec.batch} rows a rank a step; "
        "the same rows and first weights for DDP, DDP + ZeRO-1 and FSDP2",
        "",
    ]
    if n:
        out += [f"bytes each rank held after step {n} (from its tensors):"]
        out += held_table(rec, n - 1)
        out += ["", f"collectives rank 0 issued in step {n}, in order:"]
        out += calls_lines(rec, n - 1)
        p_diff, g_diff = worst_diffs(part, n)
        ok = "✓" if p_diff <= PARAM_TOL and g_diff <= GRAD_TOL else "✗"
        out += [
            "",
            f"{ok} over {n} steps: full parameters of ZeRO and FSDP within {p_diff:.1e} of DDP's "
            f"(tolerance {PARAM_TOL:g}); gradients held within {g_diff:.1e} of DDP's averaged "
            f"rows (tolerance {GRAD_TOL:g})",
        ]
    out += run_outcome(rec)
    return "\n".join(out)


def status_line(rec: RunRecord) -> str | None:
    if rec.status != RunStatus.FINISHED:
        return None
    part: ShardedRecord = rec.parts[KIND]
    n = complete_steps(rec)
    if not n:
        return None
    total = {w: sum(getattr(part.at(w.value, n - 1)[0], k) for k in WHAT) for w in WAYS}
    p_diff, g_diff = worst_diffs(part, n)
    # past a tolerance the line says so: "within 2e-05 of DDP's" alone reads as a pass
    bad = p_diff > PARAM_TOL or g_diff > GRAD_TOL
    verdict = (
        f"✗ ZeRO or FSDP past the tolerance: parameters {within(p_diff, of=DDPS)}, "
        f"gradients {within(g_diff)}"
        if bad
        else f"parameters {within(p_diff, of=DDPS)}"
    )
    return (
        f"Run {rec.run} finished: rank 0 held {kb(total[WAYS[0]])} with DDP, "
        f"{kb(total[WAYS[1]])} with ZeRO-1, {kb(total[WAYS[2]])} with FSDP on "
        f"{rec.world_size} ranks; {verdict}."
    )
