"""What DDP does not average, in words: the lines the CLI prints and the status bar shows for
buffers, the reducer's error, the cost of ``find_unused_parameters``, the checkpoint and the
launch variables of a run (pure; every figure is a recorded one)."""

from __future__ import annotations

from ddp_viz.model.frame import fmt
from ddp_viz.model.timeline import RunRecord


def launch_line(rec: RunRecord) -> str:
    launch = rec.state.launch
    if not launch:
        return ""
    first = launch[min(launch)]
    own = ("RANK", "LOCAL_RANK")
    shared = " ".join(f"{k}={v}" for k, v in first.env.items() if k not in own)
    per_rank = "; ".join(
        f"rank {r}: " + " ".join(f"{k}={v}" for k, v in ev.env.items() if k in own)
        for r, ev in sorted(launch.items())
    )
    return f"launched with init_method={first.init_method} · {shared} · {per_rank}"


def buffer_line(rec: RunRecord, step: int, moment: str) -> str:
    """Whether the ranks' buffers agreed ``before`` or ``after`` the forward of ``step``."""
    agreement = rec.state.agreement(step, rec.world_size, moment)
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
    errors = rec.state.reducer_errors
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
    cost = rec.state.cost_ms()
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
    counts = rec.state.allreduce_counts()
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
    saved, loaded = rec.state.saved, rec.state.loaded
    if saved is None:
        return []
    out = [f"rank 0 saved state_dict(): {saved.size} bytes, sha256 {saved.sha256[:16]}…"]
    for r, ev in sorted(loaded.items()):
        same = "✓ the same file" if ev.sha256 == saved.sha256 else "✗ a different file"
        params = "parameters equal its own" if ev.same_params else "✗ parameters differ"
        replaced = f"; the load replaced its {', '.join(ev.replaced)}" if ev.replaced else ""
        out.append(f"rank {r} loaded it (map_location='cpu'): {same}, {params}{replaced}")
    return out


def state_lines(rec: RunRecord) -> list[str]:
    """Every line that applies to ``rec``, for the CLI's report."""
    out = [launch_line(rec)]
    steps = sorted({s for s, _ in rec.state.buffers})
    for s in steps:
        out += [buffer_line(rec, s, "before"), buffer_line(rec, s, "after")]
    out += [reducer_line(rec), cost_line(rec), count_line(rec), *checkpoint_lines(rec)]
    out = [line for line in out if line]
    return [*out, ""] if out else []
