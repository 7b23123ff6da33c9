"""Plain-text report of a run of the restart lesson, for the headless CLI, and the status
bar's line."""

from __future__ import annotations

from ddp_viz.kinds.resuming import events as ev
from ddp_viz.kinds.resuming.record import (
    RestartRecord,
    bit_equal,
    first_step_alike,
    loads_agree,
    lost,
    masks_differing,
    part,
    predicted_lost,
    reshard_equal,
    restart_equal,
    same_rows,
    spec_of,
    variant_equal,
    zero_consolidated,
    zero_partition,
)
from ddp_viz.kinds.resuming.spec import LABELS, VARIANTS, RestartSpec
from ddp_viz.model.report import rank_pids, run_outcome
from ddp_viz.model.timeline import RunRecord, RunStatus


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def save_lines(p: RestartRecord, world: int) -> list[str]:
    if p.saved is None:
        return []
    s = p.saved
    waits = ", ".join(f"rank {r} {e.waited:.3f} s" for r, e in sorted(p.loaded.items()))
    return [
        f"save and load after step {s.step}:",
        f"  rank 0 saved {s.bytes:,} bytes: {', '.join(s.keys)}; the others waited at the "
        f"barrier ({waits})",
        f"{mark(loads_agree(p))} every rank loaded rank 0's weights with map_location "
        f"(CRC-32 {s.weights}): "
        + ", ".join(f"rank {r} {e.weights}" for r, e in sorted(p.loaded.items())),
    ]


def why(p: RestartRecord, variant: str, world: int) -> str:
    """What the first resumed step did differently, as rank ``world - 1`` saw it."""
    e = p.compared.get((variant, world - 1))
    if e is None:
        return ""
    if variant == "no_epoch":
        return (
            f"rank {e.rank}'s rows {e.rows} not {e.rows_want}"
            if not same_rows(p, variant)
            else "the same rows"
        )
    if variant == "no_rng":
        n = masks_differing(p, variant)
        size = sum(x.mask_size for (v, _), x in p.compared.items() if v == variant)
        return f"dropout masks: {n} of {size} places differ"
    if variant == "no_optimizer":
        return f"Adam's step {e.adam_step:g} not {e.adam_step_want:g}"
    if not first_step_alike(p, variant):
        return "the first resumed step differs: rows, masks or Adam's step"
    if variant_equal(p, variant):
        return "rows, masks and Adam's step as never stopped"
    return (
        "rows, masks and Adam's step as never stopped; a new DDP's first bucket holds the "
        "values in another order, which the ring adds in another order at 3+ ranks"
    )


def resume_lines(p: RestartRecord, spec: RestartSpec, world: int) -> list[str]:
    at = spec.resume_step(world)
    out = [f"resumed after step {at} (epoch {spec.resume_epoch}), against the run never stopped:"]
    for variant in VARIANTS:
        events = [e for (v, _), e in p.compared.items() if v == variant]
        if not events:
            continue
        ok = variant_equal(p, variant)
        worst = max(e.max_diff for e in events)
        said = "bit for bit" if ok else f"largest |Δ| {worst:.1e}"
        n = sum(bit_equal(e) for e in events)
        out.append(
            f"{mark(ok)} {LABELS[variant]:<26} {said:<20} {n} of {len(events)} ranks equal; "
            f"{why(p, variant, world)}"
        )
    return out


def reshard_lines(p: RestartRecord) -> list[str]:
    events = [p.reshards[r] for r in sorted(p.reshards)]
    if not events:
        return []
    n, m = events[0].saved_at, events[0].loaded_at
    files = ", ".join(f"rank {e.rank} {e.bytes:,} B" for e in events)
    loaders = [e for e in events if e.rank < m]
    rows = "; ".join(
        f"rank {e.rank} " + ", ".join(f"{k} {v}" for k, v in e.rows.items()) for e in loaders
    )
    worst = max((e.max_diff for e in loaders), default=-1.0)
    ok = reshard_equal(p)
    said = "bit for bit" if ok else f"largest |Δ| {worst:.1e}"
    steps = sorted({e.adam_step for e in loaders})
    return [
        f"sharded state: FSDP2 saved with torch.distributed.checkpoint at {n} ranks, "
        f"loaded at {m}:",
        f"  each rank's file: {files}",
        f"  rows after loading: {rows}",
        f"{mark(ok)} parameters loaded at {m} = saved at {n}, {said}; Adam's step "
        + ", ".join(f"{s:g}" for s in steps),
    ]


def zero_lines(p: RestartRecord) -> list[str]:
    events = [p.zeros[r] for r in sorted(p.zeros)]
    first = p.zeros.get(0)
    if not events or first is None:
        return []
    held = "; ".join(
        f"rank {e.rank} {', '.join(e.owned) or 'nothing'} ({e.state_bytes:,} B)" for e in events
    )
    others = [e for e in events if e.rank != 0]
    said = (
        "= plain Adam's, bit for bit"
        if first.state_diff == 0.0
        else f"≠ plain Adam's (largest |Δ| {first.state_diff:.1e})"
    )
    which = ("rank " if len(others) == 1 else "ranks ") + ", ".join(str(e.rank) for e in others)
    refused = sorted({e.refused or "(nothing: it returned a state)" for e in others})
    return [
        f"ZeRO: ZeroRedundancyOptimizer over Adam, one step at {len(events)} ranks; each rank "
        "holds the Adam state of its own parameters:",
        f"  {held}",
        f"{mark(zero_partition(p))} every parameter's state on one rank; "
        f"{sum(e.state_bytes for e in events):,} B in all, gathered {first.full_bytes:,} B",
        f"{mark(zero_consolidated(p))} consolidate_state_dict(to=0): rank 0 saved "
        f"{first.full_params} parameters' state ({first.saved_bytes:,} B file), {said}; "
        f"state_dict() on {which}: " + "; ".join(refused),
    ]


def attempt_line(attempt: int, ranks: dict[int, ev.RestartAttempt]) -> str:
    """One attempt, the killed rank first: it is the cause, and a peer's gloo error after it
    ("Connection reset by peer") its consequence, said so."""
    killed = [r for r in sorted(ranks) if ranks[r].end == "killed"]
    words = []
    for r in killed + [r for r in sorted(ranks) if r not in killed]:
        a = ranks[r]
        span = f"from step {a.start_step} to {a.last_step}" if a.start_step >= 0 else ""
        if a.end == "failed":
            after = f", as rank {killed[0]} was gone" if killed else ""
            how = f"{span}, failed" if span else "failed before it resumed"
            words.append(f"rank {r} {how}{after} ({a.error[:60]})")
        elif not span:
            words.append(f"rank {r} {a.end} before it resumed")
        else:
            words.append(f"rank {r} {span}, {a.end}")
    return f"  attempt {attempt}: " + "; ".join(words)


def torchrun_lines(p: RestartRecord, spec: RestartSpec) -> list[str]:
    o = p.outcome
    if o is None:
        return []
    out = [f"a rank dies under torchrun --max-restarts {o.max_restarts} (a checkpoint every "
           f"{o.interval} steps):"]  # fmt: skip
    out += [attempt_line(a, p.ranks_of(a)) for a in p.attempt_numbers()]
    ports = sorted({a.store_port for a in p.attempts.values()})
    keys = "a prefix of the attempt's own" if spec.attempt_keys else "no prefix (env://)"
    out.append(
        f"  torchrun's store port in the attempts: {', '.join(map(str, ports))}; keys: {keys}"
    )
    steps = lost(o)
    out += [
        f"  restarts: {o.restarts} of {o.max_restarts}; rendezvous failed in "
        f"{o.mesh_failures} attempt(s)",
        f"  rank {o.killed_rank} killed after step {o.killed_after}; resumed from step "
        f"{o.resumed_from}: steps lost {steps} (after step {spec.kill_after} with a checkpoint "
        f"every {spec.interval}: {spec.kill_after} mod {spec.interval} = {predicted_lost(spec)})",
        f"{mark(restart_equal(o))} final weights "
        + (
            f"equal the run never stopped, bit for bit (CRC-32 {o.weights})"
            if restart_equal(o)
            else f"differ from the run never stopped: {o.weights or 'none'} against "
            f"{o.weights_want}, largest |Δ| {o.max_diff:.1e}"
        ),
        f"  torchrun exited {o.exit_code} after {o.seconds:.1f} s, its log says it sent "
        f"SIGTERM {o.sigterms} time(s); "
        + (
            f"{o.left_behind} checkpoint(s) left half written"
            if o.left_behind
            else "no checkpoint left half written"
        ),
    ]
    return out


def restart_report(rec: RunRecord) -> str:
    p, spec, world = part(rec), spec_of(rec), rec.world_size
    out = [
        f"restart run {rec.run}: {world} ranks over gloo, rank pids {rank_pids(rec)}",
        f"model: Linear(4, {spec.hidden}) → tanh → Dropout({spec.dropout:g}) → "
        f"Linear({spec.hidden}, 1); Adam lr {spec.lr:g}; DistributedSampler(shuffle=True, "
        f"seed={spec.seed}) over {spec.rows} rows, {spec.batch} a rank a step: "
        f"{spec.steps_per_epoch(world)} steps an epoch, {spec.total_steps(world)} in all",
        "",
    ]
    out += save_lines(p, world)
    if p.compared:
        out += ["", *resume_lines(p, spec, world)]
    if p.reshards:
        out += ["", *reshard_lines(p)]
    if p.zeros:
        out += ["", *zero_lines(p)]
    if p.outcome is not None:
        out += ["", *torchrun_lines(p, spec)]
    out += run_outcome(rec)
    return "\n".join(out)


def status_line(rec: RunRecord) -> str | None:
    p = part(rec)
    o = p.outcome
    if rec.status != RunStatus.FINISHED or o is None:
        return None
    equal = sum(variant_equal(p, v) for v in VARIANTS)
    final = "equal to" if restart_equal(o) else "different from"
    return (
        f"Run {rec.run} finished: {equal} of {len(VARIANTS)} resumes bit-equal; torchrun "
        f"restarted {o.restarts} time(s), lost {lost(o)} step(s), final weights {final} the "
        "run never stopped."
    )
