"""The kinds of run, found by discovery and kept in one registry keyed by id (pure).

A kind of run (the all-reduce by hand, uneven inputs, a watched script …) is a folder,
``src/ddp_viz/kinds/<id>/``. Importing the folder's package defines the kind's events (which
registers them, see :mod:`ddp_viz.model.event_base`) and calls :func:`register` once with a
:class:`RunKind` saying what the kind adds to the core: its scenario table, the part of the run
record it folds, its stage scenes and their phase words, its report and status lines, its quiz
quantities and its form's field names. The core loops over :func:`kinds` and names none of them.

Its engine part (torch) and its form (Qt) sit in the same folder as ``engine.py`` and
``form.py``; the engine and the window load them through their own registries, so this module
imports neither torch nor Qt. The window, the command line and the bench find a kind's
``qt``, ``cli`` and ``bench`` parts the same way (:func:`load_parts`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ddp_viz.model.cursor import Cursor
    from ddp_viz.model.event_base import Event
    from ddp_viz.model.frame import StageFrame
    from ddp_viz.model.quiz import Quantity
    from ddp_viz.model.scenario import Scenario
    from ddp_viz.model.scenes.context import SceneContext
    from ddp_viz.model.timeline import RunRecord, StepRecord

KINDS_PACKAGE = "ddp_viz.kinds"


class TableSpec(Protocol):
    """A kind's scenario table (``[collective]``): parsed, checked against the whole scenario,
    and written back."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TableSpec: ...

    def to_dict(self) -> dict[str, Any]: ...

    def fixed_steps(self, world_size: int) -> int | None:
        """The run's length when the table sets it (None: the scenario's ``steps``)."""
        ...

    def check_scenario(self, scenario: Scenario) -> None:
        """Raise ``ScenarioError`` for what the table's kind cannot run."""
        ...

    @property
    def trains(self) -> bool:
        """False: the run trains nothing (the rows and ``[data]``/``[train]`` go unused)."""
        ...


class RecordPart(Protocol):
    """What a kind folds of a run's events beside the core's steps."""

    def apply(self, event: Event) -> None: ...


SceneBuilder = Callable[["RunRecord | None", "Cursor", float, "SceneContext"], "StageFrame"]
# a quiz quantity's value in a record (None while it has not arrived)
QuantityReader = Callable[["RunRecord", "Quantity"], "float | None"]


@dataclass(frozen=True)
class QuantitySource:
    """A number a kind's prediction question can ask for, and the phase that shows it."""

    read: QuantityReader
    phase: str
    needs_param: bool = False
    # what it counts, in words for the prediction field ("a number of bytes"); "" for a
    # value that may be any real number
    unit: str = ""
    # known only once the run is over (the rank a debugging tool named): revealed in ``phase``
    # of the last step the stage shows, whatever step the question names
    at_end: bool = False


@dataclass(frozen=True)
class RunKind:
    """What one kind of run adds to the core. Every field but ``id`` is optional."""

    id: str
    # the scenario table that makes a run of this kind (``[collective]``) and its parser
    table: str | None = None
    spec: type[TableSpec] | None = None
    # a fresh part of the record, for a run whose scenario holds the table
    part: Callable[[], RecordPart] | None = None
    # a kind without a table of its own that adds to every DDP training run (what DDP does
    # not average: buffers, the reducer's error, a checkpoint): its part folds every run
    every_run: bool = False
    # DDP training itself, which the other kinds add to: the scene of a lesson that names none
    # (one kind is the default)
    default: bool = False
    # without a table: whether a scenario is about this kind (its part and engine join the
    # run, and its lesson shows it)
    claims: Callable[[Mapping[str, Any]], bool] | None = None
    # when several kinds claim one scenario, the highest precedence's lesson shows it (the
    # lesson about the most specific thing the scenario does)
    precedence: int = 0
    # what the kind asks of the whole scenario, beyond its table's own check
    check_scenario: Callable[[Scenario], None] | None = None
    # the run's length in steps as the part counts them (None: the core's own count)
    complete_steps: Callable[[RunRecord], int | None] | None = None
    # the ranks that train step n (None: every rank)
    step_ranks: Callable[[RunRecord, int], list[int]] | None = None
    # every step's tensor values are recorded, however long the run (its lesson needs them)
    values_every_step: bool = False
    scenes: Mapping[str, SceneBuilder] = field(default_factory=dict)
    # the toolbar's word for each of a scene's four phases
    phase_words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the whole text report of a run of this kind (the CLI), replacing the training report
    report: Callable[[RunRecord], str] | None = None
    # lines the training report adds after the steps, and its last line when the kind says
    # how the run ended
    report_lines: Callable[[RunRecord], list[str]] | None = None
    report_end: Callable[[RunRecord], str | None] | None = None
    # lines the training report's step table adds under a rank's rows (the core indents them)
    rank_lines: Callable[[RunRecord, StepRecord, int], list[str]] | None = None
    # (epoch, row) for every row a rank trained on in a step, when the kind's events say it
    # better than the rank's own report (micro-batches that span two epochs); None: the core's
    rows_of_step: Callable[[RunRecord, StepRecord, int], list[tuple[int, int]] | None] | None = None
    # the status bar's line for a finished run of this kind (None: the core's line)
    status: Callable[[RunRecord], str | None] | None = None
    # the status bar's line while a run of this kind trains, when it has more to say than
    # that it trains (why it takes as long as it does); None: the core's line
    running: Callable[[RunRecord], str | None] | None = None
    # reasons of the kind's own why DDP's average is not one process's gradient on a step's
    # rows (each a clause; the core joins them with its own)
    differs: Callable[[RunRecord, StepRecord], list[str]] | None = None
    # spans for the Chrome trace beyond the training phases
    trace_spans: Callable[[RunRecord], list[dict[str, Any]]] | None = None
    quantities: Mapping[str, QuantitySource] = field(default_factory=dict)
    # the form's name for each of the table's fields (its messages name them as labelled)
    field_names: Mapping[str, str] = field(default_factory=dict)
    # flags the kind adds to ``[train]``, by name: what setting one makes a run do after its loop
    train_flags: Mapping[str, str] = field(default_factory=dict)
    # False: the run trains no model of ddp-viz's (no loss, no reference, no training form)
    trains: bool = True
    # the lessons' plots have nothing to show for a run of this kind
    plots: bool = True
    # the run's model is not one of ddp-viz's (a user's own script): the scenario's ``[model]``
    # says nothing of its parameters
    foreign_model: bool = False
    # a part of the record made with the record it folds into (it reads the record's steps,
    # and may thin the record's history as it grows), kept under the kind's id
    record_part: Callable[[RunRecord], RecordPart] | None = None
    # False: the kind's scenes show none of the run's numbers, so the record does not measure
    # the widest of them for the stage
    stage_values: bool = True
    # a step is complete once every rank reported it as this kind's ranks do (None: the
    # core's rule, every rank that trains it reported all of it)
    step_reported: Callable[[RunRecord, StepRecord], bool] | None = None
    # the run's length is not known in advance: the views follow its newest step
    follow_latest: bool = False
    # while its run streams and the view follows the newest step, the stage is rebuilt when
    # the newest complete step changes and otherwise at most this often (None: every refresh)
    stage_every_ms: float | None = None
    # its scenes show a step whole, as the ranks reported it: the player moves a step at a time
    whole_steps: bool = False
    # the steps the run made, counting those its part no longer holds (None: the record's
    # complete steps)
    steps_done: Callable[[RunRecord], int] | None = None
    # the status line's words for how long the run took (None: the run's elapsed seconds)
    elapsed: Callable[[RunRecord], str] | None = None
    # where each rank runs (rank -> host), when the kind's ranks report it (the process
    # table's last column shows hosts, not rows)
    rank_hosts: Callable[[RunRecord], dict[int, str]] | None = None
    # the ranks whose training is over while the run is not (each sent its last word)
    ranks_done: Callable[[RunRecord], set[int]] | None = None
    # each rank's state in the Processes table where the kind knows better than "training"
    # or "done" (a watched rank that failed, was killed, hangs): rank -> a word or two
    rank_states: Callable[[RunRecord], dict[int, str]] | None = None
    # the status bar's line while the run streams in, when the kind has something to say
    # (the watch doctor's diagnosis); None: the core's "training…" stands
    status_live: Callable[[RunRecord], str | None] | None = None
    # the commands that record a run of this kind, besides ``ddp-viz run`` (the docs and the
    # help of ``--open`` name them)
    records: tuple[str, ...] = ()
    # the folder under ``assets/`` of the page a run of this kind opens on, outside the course;
    # a recording of such a run names the kind's id as its lesson
    page: str | None = None
    # what a run on that page is, for the docs ("your own script under `ddp-viz watch`")
    page_note: str = ""
    # the test that checks the lessons' listing against the engine, when the listing has
    # another shape than the engine's code (the ring's two loops are its engine's one loop);
    # "": the listing is made of the engine's `# listing:` regions (model.lesson_rules)
    listing_checked_by: str = ""
    # the version of the kind's own events (those its folder defines), written in every
    # recording's header: the kind adds or changes an event by raising it, never the core's
    # schema version; ``upgrades[v]`` turns one of its events of version v into v + 1's
    events_version: int = 1
    upgrades: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] = field(default_factory=dict)

    def owns(self, scenario: Mapping[str, Any]) -> bool:
        """Is a run of this scenario (a mapping, as ``run_started`` carries it) of this kind?"""
        if self.table is not None:
            return self.table in scenario
        return self.claims is not None and self.claims(scenario)

    def folds(self, scenario: Mapping[str, Any]) -> bool:
        """Is a run of this scenario (also) of this kind: does the kind fold its part of the
        record and add its engine part to the run?"""
        return self.every_run or self.owns(scenario)


@dataclass(frozen=True)
class CommandHost:
    """What ``ddp-viz`` does for a kind's own subcommand (its folder's ``cli.py``, whose
    ``run(args, host)`` gets this): the window's arguments as ``ddp-viz ARGV`` parses them,
    opening the window with such arguments (its exit code), and whether a window can open."""

    window_args: Callable[[list[str]], Any]  # an argparse.Namespace
    open_window: Callable[[Any], int]
    has_display: Callable[[], bool]


class DuplicateKind(ValueError):
    """Two kinds registered the same id."""


_KINDS: dict[str, RunKind] = {}
_loaded: list[str] = []  # the kind folders imported so far (discovery runs once)
_parts: dict[tuple, dict[str, ModuleType]] = {}  # load_parts, by module and kind folders


def register(kind: RunKind) -> RunKind:
    """Add ``kind``; a second kind with the same id is refused (a folder registers once)."""
    known = _KINDS.get(kind.id)
    if known is not None and known != kind:
        raise DuplicateKind(f"a kind {kind.id!r} is already registered")
    _KINDS[kind.id] = kind
    return kind


def unregister(kind_id: str) -> None:
    """Take a kind out again (a test's own toy kind)."""
    _KINDS.pop(kind_id, None)


def kind_folders() -> list[str]:
    """The ids of the folders under ``ddp_viz/kinds/`` (each a package)."""
    package = importlib.import_module(KINDS_PACKAGE)
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.ispkg)


def load() -> None:
    """Import every kind folder once, which registers its kind and its events."""
    if _loaded:
        return
    _import_new()


def _import_new() -> None:
    for name in kind_folders():
        if name not in _loaded:
            package = f"{KINDS_PACKAGE}.{name}"
            importlib.import_module(package)
            # a kind whose package is imported where its registration is not wanted (code of
            # it that runs inside processes of the user's own) registers in ``kind.py``
            if importlib.util.find_spec(f"{package}.kind") is not None:
                importlib.import_module(f"{package}.kind")
            _loaded.append(name)


def add_folder(path: str) -> None:
    """Find kinds in ``path`` too (a folder of kind packages) and load the new ones, as
    ``DDP_VIZ_KINDS_PATH`` does for a process that starts with it set."""
    package = importlib.import_module(KINDS_PACKAGE)
    if path not in package.__path__:
        package.__path__.append(path)
    _parts.clear()
    load()
    _import_new()


def load_parts(module: str) -> dict[str, ModuleType]:
    """Import the module ``module`` (``engine``, ``form``) of every kind folder that has one,
    keyed by kind folder: how the engine and the window find their side of each kind. Found
    once per set of kind folders: the window asks as each run starts, and looking through
    the folders again took a few ms of that run's first frame."""
    load()
    package = importlib.import_module(KINDS_PACKAGE)
    key = (module, tuple(package.__path__), tuple(_loaded))
    found = _parts.get(key)
    if found is None:
        found = {}
        for name in kind_folders():
            qualified = f"{KINDS_PACKAGE}.{name}.{module}"
            if importlib.util.find_spec(qualified) is not None:
                found[name] = importlib.import_module(qualified)
        _parts[key] = found
    return dict(found)


def remove_folder(path: str) -> None:
    """Forget the kinds found in ``path``: their registration, their events, their modules."""
    import sys

    from ddp_viz.model.event_base import EVENT_TYPES

    package = importlib.import_module(KINDS_PACKAGE)
    if path in package.__path__:
        package.__path__.remove(path)
    _parts.clear()
    gone = [name for name in _loaded if name not in kind_folders()]
    for name in gone:
        _loaded.remove(name)
        unregister(name)
        prefix = f"{KINDS_PACKAGE}.{name}"
        for event, cls in list(EVENT_TYPES.items()):
            if cls.__module__ == prefix or cls.__module__.startswith(prefix + "."):
                del EVENT_TYPES[event]
        for module in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
            del sys.modules[module]


@functools.cache  # asked for every line a recording reads
def events_kind(cls: type) -> str | None:
    """The kind whose folder defines the event class ``cls`` (its folder's name is its id);
    None for the core's own events."""
    parts, root = cls.__module__.split("."), KINDS_PACKAGE.split(".")
    return parts[len(root)] if parts[: len(root)] == root and len(parts) > len(root) else None


def events_version(kind_id: str) -> int:
    """The version of ``kind_id``'s events this ddp-viz writes and reads (1: a kind it does
    not know, or one that never changed its events)."""
    kind = get(kind_id)
    return 1 if kind is None else kind.events_version


def event_versions() -> dict[str, int]:
    """Every kind that defines events, with the version of its events: what a recording's
    header says it holds."""
    from ddp_viz.model.event_base import EVENT_TYPES

    load()
    ids = {k for cls in EVENT_TYPES.values() if (k := events_kind(cls)) is not None}
    return {k: events_version(k) for k in sorted(ids)}


def kinds() -> Iterator[RunKind]:
    load()
    return iter(list(_KINDS.values()))


def get(kind_id: str) -> RunKind | None:
    load()
    return _KINDS.get(kind_id)


def kind_of(scenario: Mapping[str, Any]) -> RunKind | None:
    """The kind a run of ``scenario`` is about, whose lesson shows it: the kind whose table the
    scenario holds, else the claiming kind of the highest precedence, else None (DDP training)."""
    tabled = next((k for k in kinds() if k.table is not None and k.owns(scenario)), None)
    if tabled is not None:
        return tabled
    claiming = [k for k in kinds() if k.table is None and k.owns(scenario)]
    return max(claiming, key=lambda k: k.precedence, default=None)


def page_of(lesson: str) -> str | None:
    """The page folder of the kind whose id is ``lesson`` (a recording's header names it for
    a run with a page of its own), or None for a lesson of the course."""
    kind = get(lesson)
    return kind.page if kind is not None else None


def kind_showing(scene: str) -> RunKind | None:
    """The kind whose scenes include ``scene`` (a lesson that names no kind shows it)."""
    return next((k for k in kinds() if scene in k.scenes), None)


def train_flags() -> dict[str, str]:
    """Every kind's ``[train]`` flags, by name (what each makes a run do)."""
    return {name: doc for k in kinds() for name, doc in k.train_flags.items()}


def tables() -> dict[str, type[TableSpec]]:
    """Every kind's scenario table by name."""
    return {k.table: k.spec for k in kinds() if k.table is not None and k.spec is not None}


def default_scene() -> str:
    """The scene of DDP training, the default kind's first: a lesson's when it names none."""
    kind = next((k for k in kinds() if k.default), None)
    if kind is None or not kind.scenes:
        raise LookupError("no default kind of run with a scene is registered")
    return next(iter(kind.scenes))
