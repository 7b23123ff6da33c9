"""Plain-text report of a comm-hooks run (``[hook_compression]``), for the headless CLI, and the
status bar's line."""

from __future__ import annotations

from ddp_viz.kinds.hook_compression.model import (
    KIND,
    SHOWN_LAYER,
    HooksRecord,
    complete_steps,
    spec_of,
)
from ddp_viz.model.report import rank_pids, run_outcome
from ddp_viz.model.timeline import RunRecord, RunStatus


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def summary_rows(rec: RunRecord) -> list[tuple[str, int, float, float, float]]:
    """Per variant: bytes rank 0 sent in the last step, its relative error on the shown layer,
    the mean loss of the last 10% of steps, and the largest residual."""
    part: HooksRecord = rec.parts[KIND]
    spec = spec_of(rec)
    n = complete_steps(rec)
    tail = range(max(0, n - max(1, n // 10)), n)
    out = []
    for v in spec.variants():
        last = part.at(v.id, n - 1).get(0) if n else None
        losses = [part.loss(v.id, s) or 0.0 for s in tail]
        residual = max((part.at(v.id, s)[0].residual for s in range(n)), default=0.0)
        out.append(
            (
                v.label,
                sum(last.sent) if last else 0,
                last.errors.get(SHOWN_LAYER, float("nan")) if last else float("nan"),
                _mean(losses),
                residual,
            )
        )
    return out


def hooks_report(rec: RunRecord) -> str:
    part: HooksRecord = rec.parts[KIND]
    spec = spec_of(rec)
    n = complete_steps(rec)
    pids = rank_pids(rec)
    out = [
        f"comm hooks run {rec.run}: {rec.world_size} ranks over gloo, rank pids {pids}",
        f"model: Linear(16, {spec.width}) → tanh → Linear({spec.width}, {spec.width}) → tanh → "
        f"Linear({spec.width}, 1); {spec.batch} rows a rank a step, SGD lr {spec.lr:g}; "
        f"PowerSGD after {spec.warmup} plain steps",
        "",
    ]
    # the buckets DDP rebuilt after step 1, once there is a step past it (n counts only steps
    # every rank reported for every variant, so rank 0's is there)
    if n > 1:
        later = part.at(spec.variants()[0].id, n - 1).get(0)
        buckets = "; ".join(f"b{i}: {', '.join(names)}" for i, names in enumerate(later.names))
        out += [f"buckets after the rebuild: {buckets}", ""]
    head = (
        f"{'variant':<22} {'bytes/step':>11} {'rel. error':>11} {'loss (last 10%)':>16} "
        f"{'residual max':>13}"
    )
    out += [f"after {n} steps, rank 0 (error of {SHOWN_LAYER} in the last step):", head]
    out.append("-" * len(head))
    for label, sent, error, loss, residual in summary_rows(rec):
        out.append(f"{label:<22} {sent:>11,} {error:>11.2e} {loss:>16.5f} {residual:>13.4g}")
    out += run_outcome(rec)
    return "\n".join(out)


def status_line(rec: RunRecord) -> str | None:
    if rec.status != RunStatus.FINISHED:
        return None
    rows = summary_rows(rec)
    if not rows:
        return None
    full = rows[0][1] or 1
    least = min(rows, key=lambda r: r[1])
    return (
        f"Run {rec.run} finished: {len(rows)} hook{'' if len(rows) == 1 else 's'} on "
        f"{rec.world_size} ranks; "
        f"{least[0]} sent {least[1] / full:.1%} of the default's bytes a step."
    )


# the lesson's default, 200 steps of six hooks on 2 ranks (1,200 rounds), took about 100 s on
# a 2-core laptop: from half of that on, the wait is worth a word
SLOW_ROUNDS = 600


def running_line(rec: RunRecord) -> str:
    """While it trains: why it takes a while. Every step runs the model once per hook, in
    lockstep, each hook's all-reduce a round over gloo. The time and the stage following the
    newest step are said only where they hold: a 14-step run takes seconds and plays phase
    by phase."""
    from ddp_viz.model.session import FOLLOW_LATEST_ABOVE

    spec = spec_of(rec)
    hooks = len(spec.variants())
    rounds = spec.steps * hooks
    said = (
        f"Run {rec.run}: {rec.world_size} rank(s) train one model {hooks} ways in lockstep, "
        f"{spec.steps} steps of {hooks} all-reduce hooks each ({rounds} rounds over gloo)"
    )
    said += ": a minute or more on a laptop." if rounds >= SLOW_ROUNDS else "."
    if spec.steps > FOLLOW_LATEST_ABOVE:
        said += " The stage follows the newest step."
    return said
