"""Checks shared by the frame tests: what a stage frame shows against what the run recorded."""

from __future__ import annotations

import math

from ddp_viz.model import protocol
from ddp_viz.model.frame import StageFrame, fmt
from ddp_viz.model.timeline import RunRecord, display_value

KINDS = ("loss", "local", "averaged", "params", "before")


def recorded(rec: RunRecord, step: int, key: str) -> float:
    """The recorded value a stage key stands for (``rank1.local.weight`` …)."""
    rank, kind, *name = key.split(".")
    r = int(rank.removeprefix("rank"))
    rs = rec.steps[step].ranks[r]
    if kind == "loss":
        return rs.loss
    param = ".".join(name)
    if kind == "before":
        return display_value(rec.params_before(step).get(param))
    return display_value(
        {"local": rs.local, "averaged": rs.averaged, "params": rs.params}[kind][param]
    )


def kinds_shown(frame: StageFrame) -> set[str]:
    return {
        t.key.split(".")[1] for t in frame.texts if t.key.startswith("rank") and t.value is not None
    }


def assert_frame_matches_record(frame: StageFrame, rec: RunRecord, step: int) -> None:
    """Every number with a key is the recorded value, written with its recorded digits."""
    for t in frame.texts:
        if not t.key.startswith("rank") or t.value is None:
            continue
        want = recorded(rec, step, t.key)
        assert t.value == want or (math.isnan(t.value) and math.isnan(want)), t.key
        assert t.text.endswith(fmt(want)) or t.text.endswith(f"{fmt(want)} →"), (t.key, t.text)


def assert_inside_and_apart(frame: StageFrame) -> None:
    """No text leaves the stage or overlaps another; the hub and the dots cover no text."""
    for t in frame.texts:
        b = t.box
        assert b.x >= -0.5 and b.y >= -0.5, (t.text, b)
        assert b.right <= frame.width + 0.5 and b.bottom <= frame.height + 0.5, (t.text, b)
    pairs = [(a.text, b.text) for a, b in frame.overlapping_texts()]
    assert not pairs, pairs[:5]
    for s in frame.shapes:
        if s.key not in ("hub", "dot"):
            continue
        for t in frame.texts:
            if t.key != "hub.label":
                assert not s.box.overlaps(t.box), (s.key, t.text)


def linear_run(world_size: int, rows: int = 8, steps: int = 1, lr: float = 0.01) -> RunRecord:
    """A run of the linear lesson's model computed by hand (no torch): the same events a real
    run sends, for layout tests at every world size. Values follow y = w·x + b with MSE."""
    xs = [float(i + 1) for i in range(rows)]
    ys = [2 * x + 1 for x in xs]
    base, extra = divmod(rows, world_size)
    shards, start = [], 0
    for r in range(world_size):
        size = base + (1 if r < extra else 0)
        shards.append(list(range(start, start + size)))
        start += size
    scenario = {
        "x": xs,
        "y": ys,
        "world_size": world_size,
        "steps": steps,
        "lr": lr,
        "init_weight": 0.5,
        "init_bias": 0.0,
        "model": {"kind": "linear"},
    }
    events: list[protocol.Event] = [
        protocol.RunStarted(
            1,
            world_size,
            steps,
            scenario,
            shards,
            [{"name": "weight", "shape": [1, 1]}, {"name": "bias", "shape": [1]}],
        )
    ]
    w, b = 0.5, 0.0

    def grad(rows_: list[int]) -> tuple[float, float, float]:
        n = len(rows_)
        err = [w * xs[i] + b - ys[i] for i in rows_]
        loss = sum(e * e for e in err) / n
        return (
            loss,
            sum(2 * e * xs[i] for e, i in zip(err, rows_, strict=True)) / n,
            sum(2 * e for e in err) / n,
        )

    for r in range(world_size):
        events.append(protocol.RankStarted(1, r, 1000 + r, shards[r]))
    for s in range(steps):
        per = [grad(shard) for shard in shards]
        gw = sum(p[1] for p in per) / world_size
        gb = sum(p[2] for p in per) / world_size
        full = grad(list(range(rows)))
        events.append(
            protocol.Reference(
                1,
                s,
                {"weight": [full[1]], "bias": [full[2]]},
                {"weight": [gw], "bias": [gb]},
                full[0],
                [len(x) for x in shards],
            )
        )
        w, b = w - lr * gw, b - lr * gb
        for r in range(world_size):
            loss, lw, lb = per[r]
            events += [
                protocol.LocalGrad(1, s, r, loss, {"weight": [lw], "bias": [lb]}),
                protocol.AveragedGrad(1, s, r, {"weight": [gw], "bias": [gb]}),
                protocol.Params(1, s, r, {"weight": [w], "bias": [b]}),
            ]
    events.append(protocol.RunFinished(1, steps, 0.01))
    rec = RunRecord()
    for e in events:
        rec.apply(e)
    return rec


# stage sizes every scene is checked at: a laptop's stage, a small one, a projector's
STAGE_SIZES = [(1280, 720, "light"), (560, 480, "light"), (1341, 700, "projector")]


def assert_fits(frame: StageFrame, theme: str) -> None:
    """Nothing off the stage or overlapping, and projector type readable from the back."""
    assert_inside_and_apart(frame)
    if theme == "projector":
        assert frame.smallest_px() >= 24
