"""What a recording is: a header line, then events (pure).

Every event stream ddp-viz writes for others to read (``ddp-viz run --json``, ``ddp-viz run
--events``, ``ddp-viz watch --record``, File ▸ Export ▸ events) starts with one header line::

    {"event":"recording","format":"ddp-viz-events","schema":6,"app":"0.1.0",
     "lesson":"ddp-pattern","kinds":{"<a kind's id>":1,…}}

``schema`` is the version of the core's events and of this header (:data:`SCHEMA_VERSION`,
bumped whenever one of them changes; ``ddp-viz schema`` prints the whole format as JSON
Schema), ``kinds`` the version of each kind's own events (the kind's to raise), ``app`` the
version of ddp-viz that wrote it, ``lesson`` the id of the lesson whose stage shows the run,
or ``"watched"`` for a user's own script under ``ddp-viz watch``. A file without a header was
written before versioned recordings: it reads as schema 0 (:mod:`ddp_viz.model.recordings`
upgrades it one step per version); one without ``kinds`` has every kind's events at version 1.

Numbers that are not finite (a loss that went NaN) are written as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``, never as bare tokens, so every JSON tool parses every line;
reading turns them back into floats where the schema declares a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddp_viz import __version__
from ddp_viz.model import registry
from ddp_viz.model.event_base import Event

FORMAT = "ddp-viz-events"
# version 1: the header line, non-finite numbers as strings, run_started.params and .cores
# always written, enums as Literal words, tensor summaries typed
# version 2: the events and tables of two new kinds of run (the evaluation and the sharded
# lessons); nothing older changed
# version 3: the watch doctor's events (watch_beat, watch_hang, watch_rank_lost,
# watch_non_finite, watch_digests); nothing older changed
# version 4: a watched rank's failure and exit (watch_failure, watch_exit) and the steps it
# began in its last word (watch_dropped.steps); nothing older changed
# version 5: the events and tables of the mixed-precision lesson and of the restart lesson
# (checkpoint_saved, checkpoint_loaded, resume_compared, restart_attempt, restart_outcome);
# nothing older changed
# version 6: the header says which version of its own events each kind wrote (``kinds``).
# From here on this number moves only for the core's events and the header: a kind adds or
# changes its events under its own version (``RunKind.events_version``, with its upgrades)
SCHEMA_VERSION = 6
HEADER_KIND = "recording"

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@dataclass(frozen=True)
class RecordingHeader(Event):
    """The first line of every recording: which format, which schema version, written by which
    ddp-viz, the lesson it belongs to (``"watched"``: a watched run), and the version of each
    kind's own events (a kind not named: version 1)."""

    kind: ClassVar[str] = HEADER_KIND
    format: str
    schema: int
    app: str
    lesson: str
    kinds: dict[str, int] = field(default_factory=dict)


def header(lesson: str) -> RecordingHeader:
    """The header this ddp-viz writes for a run of ``lesson``."""
    return RecordingHeader(FORMAT, SCHEMA_VERSION, __version__, lesson, registry.event_versions())


def finite_word(x: float) -> float | str:
    """A float as the format writes it: itself, or its word when it is not finite."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def strict(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its word, however deeply nested."""
    if type(value) is float:
        return finite_word(value)
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value
