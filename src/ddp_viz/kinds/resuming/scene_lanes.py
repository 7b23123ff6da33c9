"""The restart scene's torchrun phases: a lane per rank and attempt, on an axis of steps.

Each lane runs from the step the rank started (or resumed) from to the last step it finished,
with a tick at every checkpoint rank 0 saved in that attempt, and says how the rank ended.
After the restart the steps the death cost (from the checkpoint resumed to the step the rank
died after) are outlined on every lane: they were trained twice.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ddp_viz.kinds.resuming.events import RestartAttempt
from ddp_viz.kinds.resuming.record import lost, predicted_lost, restart_equal
from ddp_viz.model.frame import Rect

if TYPE_CHECKING:
    from ddp_viz.kinds.resuming.scene import Builder  # which imports this module

ENDS = {"finished": "finished", "killed": "SIGKILL", "stopped": "stopped", "failed": "failed"}


def short_error(error: str) -> str:
    """gloo's words up to their first full stop, without the source file before them."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", error)
    return text.split(". ")[0]


def gist(error: str) -> str:
    """gloo's connect failure in a few words: "connectFullMesh … Connection refused"."""
    if "connectFullMesh" not in error:
        return short_error(error)
    tail = error.rsplit("] ", 1)[-1].split(":")[0] if "] " in error else ""
    return f"connectFullMesh … {tail}".strip()


def end_text(a: RestartAttempt) -> str:
    if a.end == "killed":
        return f"killed after {a.last_step}"
    if a.end == "failed" and a.last_step < 0:
        return "rendezvous failed"
    if a.start_step < 0:
        return f"{ENDS[a.end]} at start"
    return f"{ENDS[a.end]} after {a.last_step}"


def draw_lanes(
    b: Builder, area: Rect, y: float, attempt: int, redone: tuple[int, int] | None
) -> float:
    """A lane for every rank of ``attempt``; the ``y`` below them."""
    f, t = b.small, b.t
    ranks = b.part.ranks_of(attempt)
    total = max(1, b.spec.total_steps(b.world))
    label_w = b.width(f"rank {b.world - 1}", f) + f.px * 0.6
    end_w = max(b.width(end_text(a), f) for a in ranks.values()) if ranks else 0.0
    end_w = min(end_w, area.w * 0.4) + f.px * 0.6
    x0, x1 = area.x + label_w, area.right - end_w
    saved = ranks[0].saved if 0 in ranks else []

    def at(step: int) -> float:
        return x0 + (x1 - x0) * min(max(0, step), total) / total

    for rank in range(b.world):
        if y + b.text_h > area.bottom + 0.5:
            break
        b.text(area.x, y, f"rank {rank}", f, t.rank_color(rank))
        a = ranks.get(rank)
        top, h = y + b.text_h * 0.2, b.text_h * 0.6
        b.shape(kind="rect", box=_rect(x0, top, x1 - x0, h), stroke=t.grid, width=1.0)
        if a is not None and a.last_step >= max(0, a.start_step):
            start = max(0, a.start_step)
            box = _rect(at(start), top, at(a.last_step) - at(start), h)
            b.shape(kind="rect", box=box, fill=t.rank_color(rank), fill_alpha=150)
        if redone is not None:
            box = _rect(at(redone[0]), top - 2, at(redone[1]) - at(redone[0]), h + 4)
            b.shape(kind="rect", box=box, stroke=t.bad, width=2.0)
        for step in saved:
            b.shape(
                kind="line",
                points=((at(step), top - 3), (at(step), top + h + 3)),
                stroke=t.text,
                width=2.0,
            )
        if a is not None:
            ink = (
                t.bad if a.end in ("killed", "failed") else t.ok if a.end == "finished" else t.muted
            )
            text = b.fit([end_text(a), ENDS[a.end]], f, end_w - f.px * 0.4)
            b.text(x1 + f.px * 0.5, y, text, f, ink, key=f"end.{attempt}.{rank}")
        y += b.lh
    return y


def _rect(x: float, y: float, w: float, h: float) -> Rect:
    return Rect(x, y, max(0.0, w), h)


def draw_dies(b: Builder, area: Rect) -> None:
    o, t, s = b.part.outcome, b.t, b.spec
    assert o is not None
    y = b.say(
        area,
        area.y,
        [
            f"attempt 0 · a checkpoint every {s.interval} steps (|) · rank {o.killed_rank} "
            f"sends itself SIGKILL after step {o.killed_after}",
            f"attempt 0 · checkpoint every {s.interval} · rank {o.killed_rank} killed "
            f"after {o.killed_after}",
        ],
        t.text,
    )
    y = draw_lanes(b, area, y, 0, None)
    ranks = b.part.ranks_of(0).values()
    failed = [a for a in ranks if a.end == "failed"]
    stopped = [a for a in ranks if a.end == "stopped"]
    words = [f"torchrun sent SIGTERM {o.sigterms}×"]
    if failed:
        words.append(f"{len(failed)} failed in a collective ({short_error(failed[0].error)})")
    if stopped:
        words.append(f"{len(stopped)} stopped before a word")
    b.say(area, y + b.pad * 0.2, ["; ".join(words), words[0]], t.muted, key="others")


def fits(b: Builder, area: Rect, lines: int) -> bool:
    return lines <= int((area.h - b.text_h) // b.lh) + 1


def draw_restart(b: Builder, area: Rect) -> None:
    """The failed attempts, the last attempt and its lanes, the restarts, the steps lost and
    the final weights. When the stage is short the store's line goes first, then the
    restarts and the steps lost share a line, then the last attempt's heading goes."""
    p, t = b.part, b.t
    o = p.outcome
    assert o is not None
    numbers = p.attempt_numbers()
    last = numbers[-1] if numbers else 0
    failed = numbers[1:-1]
    need = b.world + len(failed) + 5
    ports_line = fits(b, area, need + 0.2)
    shared = not fits(b, area, need - 1 + 0.2)
    heading = fits(b, area, need - 2 + 0.2)
    y = area.y
    for attempt in failed:
        bad = [a for a in p.ranks_of(attempt).values() if a.error]
        why = [short_error(bad[0].error), gist(bad[0].error)] if bad else ["ended early"]
        texts = [*(f"attempt {attempt}: {w}" for w in why), f"attempt {attempt} failed"]
        y = b.say(area, y, texts, t.bad, key=f"attempt.{attempt}")
    if heading:
        y = b.say(
            area,
            y,
            [
                f"attempt {last} (TORCHELASTIC_RESTART_COUNT={last}): every rank resumed from "
                f"step {o.resumed_from}",
                f"attempt {last}: resumed from step {o.resumed_from}",
            ],
            t.text,
        )
    if ports_line:
        y = store_line(b, area, y, last)
    redone = (o.resumed_from, o.killed_after) if lost(o) > 0 else None
    y = draw_lanes(b, area, y, last, redone) + b.pad * 0.2
    y = counts(b, area, y, shared)
    ok = restart_equal(o)
    rounding = 0 < o.max_diff < 1e-6  # a few float32 roundings: DDP's bucket order (lesson.md)
    texts = (
        [
            f"✓ final weights = the run never stopped, bit for bit (CRC-32 {o.weights})",
            "✓ final weights = never stopped, bit for bit",
        ]
        if ok
        else [
            f"✗ final weights ≠ the run never stopped (largest |Δ| {o.max_diff:.1e})"
            + (": the restart is a new DDP, its first bucket in another order" if rounding else ""),
            f"✗ final weights ≠ the run never stopped (largest |Δ| {o.max_diff:.1e})",
            "✗ final weights ≠ never stopped",
        ]
    )
    b.say(area, y, texts, t.ok if ok else t.bad, key="final")


def store_line(b: Builder, area: Rect, y: float, last: int) -> float:
    """The port of torchrun's store each attempt joined through, and whose keys it read."""
    ports = sorted({a.store_port for a in b.part.attempts.values()})
    same = "the same store port in every attempt" if len(ports) == 1 else "store ports differ"
    keys = "keys of its own" if b.spec.attempt_keys else "the keys left by the last"
    texts = [
        f"{same} ({', '.join(map(str, ports))}); attempt {last} joined through {keys}",
        f"{same}; {keys}",
    ]
    return b.say(area, y, texts, b.t.muted, key="ports")


def counts(b: Builder, area: Rect, y: float, shared: bool) -> float:
    """The restarts and the steps lost, on a line each or (``shared``) on one."""
    o, s, f = b.part.outcome, b.spec, b.small
    assert o is not None
    n = lost(o)
    restarts = [
        f"restarts: {o.restarts} of --max-restarts {o.max_restarts}",
        f"restarts: {o.restarts} of {o.max_restarts}",
    ]
    steps = [
        f"steps lost: {n}, outlined (killed after {o.killed_after}, last checkpoint "
        f"{o.resumed_from}; {s.kill_after} mod {s.interval} = {predicted_lost(s)})",
        f"steps lost: {n} ({s.kill_after} mod {s.interval} = {predicted_lost(s)})",
        f"lost: {n}",
    ]
    if not shared:
        y = b.say(area, y, restarts, b.t.text, key="restarts", value=float(o.restarts))
        return b.say(area, y, steps, b.t.text, key="lost", value=float(n))
    first = b.fit(restarts[1:], f, area.w / 2)
    b.text(area.x, y, first, f, b.t.text, key="restarts", value=float(o.restarts))
    x = area.x + b.width(first, f) + f.px
    rest = Rect(x, y, area.right - x, area.bottom - y)
    return b.say(rest, y, steps[1:], b.t.text, key="lost", value=float(n))
