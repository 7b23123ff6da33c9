"""The watched kind's registration (see the package's docstring for why it is here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_viz.kinds.watched import events as _events  # (defines, so registers)
from ddp_viz.kinds.watched.diagnosis import finished_status, rank_states, status_line
from ddp_viz.kinds.watched.events import KIND
from ddp_viz.kinds.watched.history import History, complete_count
from ddp_viz.kinds.watched.run import places, ranks_ended
from ddp_viz.kinds.watched.scene import build
from ddp_viz.kinds.watched.steps import watched_elapsed
from ddp_viz.model.registry import RunKind, register
from ddp_viz.model.timeline import RunRecord, StepRecord


def claims(scenario: Mapping[str, Any]) -> bool:
    """The listener's scenario for a watched run says so and nothing else."""
    return bool(scenario.get(KIND))


def hosts(rec: RunRecord) -> dict[int, str]:
    """Where each rank runs, as it said when it joined."""
    return {p.rank: p.host for p in places(rec).values()}


def step_reported(rec: RunRecord, st: StepRecord) -> bool:
    """Every rank reported the step's timings (a step past the full captures brings no
    tensors, and is complete without them)."""
    return len(st.ranks) == rec.world_size and all(rs.spans for rs in st.ranks.values())


register(
    RunKind(
        id=KIND,
        claims=claims,
        precedence=10,  # the script is the user's: no other kind's lesson shows it
        record_part=History,
        scenes={"watch": build},
        phase_words={"watch": ("as reported",) * 4},  # one position per step (whole_steps)
        whole_steps=True,
        trains=False,
        foreign_model=True,
        stage_values=False,  # the page draws no DDP stage
        step_reported=step_reported,
        follow_latest=True,
        # its events (eight ranks' timings, gradients, digests) came in a dozen refreshes a
        # step, each rebuilding and repainting the whole page (some 13 ms of a loaded core) to
        # change a count in its header
        stage_every_ms=250,
        steps_done=complete_count,  # a long run's thinned steps too
        elapsed=watched_elapsed,  # its elapsed time is the launcher's too: say which is which
        rank_hosts=hosts,
        ranks_done=ranks_ended,  # a rank's last word: its training is over
        rank_states=rank_states,  # failed, killed, hung: what the doctor found, per rank
        status_live=status_line,  # the diagnosis in the status bar as soon as it is found
        status=finished_status,
        records=("ddp-viz watch --record", "ddp-viz listen --record"),
        page=KIND,
        page_note="your own script under `ddp-viz watch`",
        events_version=_events.EVENTS_VERSION,
        upgrades=_events.UPGRADES,
    )
)
