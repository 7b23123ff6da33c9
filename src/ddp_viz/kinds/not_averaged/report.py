"""What DDP does not average, in words: the lines the CLI prints and the status bar shows for
buffers, the reducer's error, the cost of ``find_unused_parameters`` and the checkpoint of a run
(pure; every figure is a recorded one)."""

from __future__ import annotations

from ddp_viz.kinds.not_averaged.record import part
from ddp_viz.model.frame import fmt
from ddp_viz.model.timeline import RunRecord, RunStatus


def buffer_line(rec: RunRecord, step: int, moment: str) -> str:
    """Whether the ranks' buffers agreed ``before`` or ``after`` the forward of ``step``."""
    agreement = part(rec).agreement(step, rec.world_size, moment)
    if agreement is None:
        return ""
    when = "as the forward began" if moment == "before" else "after the forward"
    if agreement.same:
        return f"step {step + 1}, {when}: ✓ buffers identical on every rank"
    names = ", ".join(agreement.differing)
    return (
        f"step {step + 1}, {when}: ✗ {names} differ between ranks "
        f"(by up to {fmt(agreement.max_diff)})"
    )


def reducer_line(rec: RunRecord) -> str:
    errors = part(rec).reducer_errors
    if not errors:
        return ""
    first = errors[min(errors)]
    names = ", ".join(first.unused) or "?"
    return (
        f"step {first.step + 1}: DDP's reducer refused to start on rank(s) "
        f"{', '.join(str(r) for r in sorted(errors))} (no gradient for {names}); it said: "
        f"{first.error}"
    )


def cost_line(rec: RunRecord) -> str:
    cost = part(rec).cost_ms()
    if cost is None:
        return ""
    with_flag, without = cost
    change = (with_flag / without - 1) * 100 if without > 0 else float("nan")
    return (
        f"find_unused_parameters=True: {with_flag:.2f} ms per step, False: {without:.2f} ms "
        f"({change:+.0f}%), medians timed alternately in this run"
    )


def count_line(rec: RunRecord) -> str:
    """The all-reduces gloo ran in each counted step, with the flag and without, beside the
    time: the flag adds the used-parameter bitmap every step, and buckets by size from step 1."""
    counts = part(rec).allreduce_counts()
    if counts is None:
        return ""

    def steps(flag: bool) -> str:
        return ", ".join(f"{b}+{m}" if flag else str(b + m) for b, m in counts[flag])

    return (
        f"all-reduces per step (steps 1–{len(counts[True])}, profiled): "
        f"find_unused_parameters=True {steps(True)} (gradient buckets + the used-parameter "
        f"bitmap); False {steps(False)} (gradient buckets only)"
    )


def checkpoint_lines(rec: RunRecord) -> list[str]:
    saved, loaded = part(rec).saved, part(rec).loaded
    if saved is None:
        return []
    out = [f"rank 0 saved state_dict(): {saved.size} bytes, sha256 {saved.sha256[:16]}…"]
    for r, ev in sorted(loaded.items()):
        same = "✓ the same file" if ev.sha256 == saved.sha256 else "✗ a different file"
        params = "parameters equal its own" if ev.same_params else "✗ parameters differ"
        replaced = f"; the load replaced its {', '.join(ev.replaced)}" if ev.replaced else ""
        out.append(f"rank {r} loaded it (map_location='cpu'): {same}, {params}{replaced}")
    return out


def report_lines(rec: RunRecord) -> list[str]:
    """Every line that applies to ``rec``, for the CLI's report."""
    out = []
    steps = sorted({s for s, _ in part(rec).buffers})
    for s in steps:
        out += [buffer_line(rec, s, "before"), buffer_line(rec, s, "after")]
    out += [reducer_line(rec), cost_line(rec), count_line(rec), *checkpoint_lines(rec)]
    out = [line for line in out if line]
    return [*out, ""] if out else []


def report_end(rec: RunRecord) -> str | None:
    """The report's last line when DDP's reducer refused a step."""
    if rec.status != RunStatus.FINISHED or not part(rec).reducer_errors:
        return None
    return f"stopped after {len(rec.complete_steps())} step(s): DDP's reducer raised (above)"


def status_line(rec: RunRecord) -> str | None:
    """The status bar's line when DDP's reducer refused a step (the core's line otherwise)."""
    if rec.status != RunStatus.FINISHED or not part(rec).reducer_errors:
        return None
    return (
        f"Run {rec.run} stopped after {len(rec.complete_steps())} step(s): DDP's reducer "
        "refused the next step (its error is on the stage)."
    )
