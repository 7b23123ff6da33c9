"""torchrun's restart, run twice on its own (no engine): every time the rank killed
on attempt 0 is restarted with the others, they join through keys of their attempt's own
(the same store port as before, which the stale keys would make fail), resume from the
checkpoint and end on the same weights. A tiny run: 2 ranks, 2 steps, the death after step 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ddp_viz.kinds.resuming.engine.torchrun import Attempts, crc_of, launch
from ddp_viz.kinds.resuming.spec import RestartSpec

pytestmark = [pytest.mark.gloo, pytest.mark.slow]
REPEATS = 2
SPEC = RestartSpec(rows=8, batch=4, epochs=2, resume_epoch=1, interval=1, kill_after=1)


def story(folder: Path, found: Attempts) -> str:
    """What a failed run did, for its assertion: each worker's log (attempt, rank, what it
    did, the error), then the end of torchrun's log, where a stuck run's stacks are."""
    lines = [
        f"attempt {a} rank {r}: "
        + " ".join(str(x["what"]) for x in rows)
        + "".join(f" | {x['error']}" for x in rows if x["what"] == "error")
        for (a, r), rows in sorted(found.lines.items())
    ]
    said = (folder / "torchrun.log").read_text(errors="replace")
    return "\n".join([*lines, "--- torchrun.log (end):", said[-6000:]])


@pytest.mark.timeout(600)
def test_the_restart_joins_every_time(tmp_path) -> None:
    finals = []
    for i in range(REPEATS):
        folder = tmp_path / f"run{i}"
        code, _ = launch(SPEC, 2, folder, timeout=200)
        found = Attempts.read(folder)
        assert code == 0, story(folder, found)
        attempts = sorted({a for a, _ in found.lines})
        assert attempts[0] == 0 and attempts[-1] >= 1, attempts
        ends = {r: found.event(0, attempts[-1], r) for r in (0, 1)}
        assert all(e.end == "finished" and e.start_step == 1 for e in ends.values()), ends
        killed = found.event(0, 0, 1)
        assert (killed.end, killed.last_step) == ("killed", 1)
        ports = {found.event(0, a, r).store_port for a, r in found.lines}
        assert len(ports) == 1  # one store for every attempt: the stale keys were there
        finals.append(crc_of(torch.load(folder / "final.pt")))
    assert len(set(finals)) == 1, finals
