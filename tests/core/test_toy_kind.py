"""A kind of run is a folder: a toy kind, written by this test into a folder of its own and
edited nowhere else, runs end to end, headless and in the window.

The toy: every rank all-reduces ``rank + value`` with ``dist.all_reduce``, reports what it sent
and the sum it got back; its scene writes one line per rank; its report and status line say
whether every rank got the same sum. Nothing outside this file names it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ddp_viz.model import registry
from ddp_viz.model.event_base import EVENT_TYPES
from ddp_viz.model.timeline import RunStatus

TOY_INIT = '''
"""A toy kind of run, made by a test."""

from dataclasses import dataclass
from typing import Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.event_base import Event
from ddp_viz.model.frame import Font
from ddp_viz.model.registry import QuantitySource, RunKind, register
from ddp_viz.model.scenes.base import FrameBuilder


@dataclass(frozen=True)
class ToySum(Event):
    kind: ClassVar[str] = "toy_sum"
    run: int
    rank: int
    sent: float
    total: float


@dataclass(frozen=True)
class ToySpec:
    value: int = 1
    trains: ClassVar[bool] = False

    @classmethod
    def from_mapping(cls, data):
        value = data.get("value", 1)
        if not isinstance(value, int) or value < 0:
            raise ScenarioError("toy.value", "must be a whole number from 0")
        return cls(value)

    def to_dict(self):
        return {"value": self.value}

    def fixed_steps(self, world):
        return 1

    def check_scenario(self, s):
        if s.world_size < 2:
            raise ScenarioError("world_size", "a toy sum needs 2 ranks")


class ToyPart:
    def __init__(self):
        self.sums = {}

    def apply(self, event):
        if event.kind == "toy_sum":
            self.sums[event.rank] = event


def complete(rec):
    return 1 if len(rec.parts["toy"].sums) == rec.world_size else 0


def report(rec):
    sums = rec.parts["toy"].sums
    lines = [f"toy rank {r} sent {e.sent:g} got {e.total:g}" for r, e in sorted(sums.items())]
    same = len({e.total for e in sums.values()}) == 1
    return "\\n".join([*lines, f"toy: {'same sum on every rank' if same else 'sums differ'}"])


def status(rec):
    return f"Toy run {rec.run}: {len(rec.parts['toy'].sums)} sums" if rec.done else None


def scene(rec, cursor, progress, ctx):
    b = FrameBuilder(ctx)
    for i, (r, e) in enumerate(sorted(rec.parts["toy"].sums.items())):
        b.text(b.pad, b.pad + 30 * i, f"toy rank {r}: {e.total:g}", Font(b.base), b.t.text)
    return b.frame


def total(rec, quantity):
    e = rec.parts["toy"].sums.get(quantity.rank) if "toy" in rec.parts else None
    return None if e is None else e.total


register(
    RunKind(
        id="toy",
        table="toy",
        spec=ToySpec,
        part=ToyPart,
        complete_steps=complete,
        scenes={"toy_sums": scene},
        report=report,
        status=status,
        quantities={"toy_total": QuantitySource(total, phase="step")},
        field_names={"toy.value": "Toy value"},
        trains=False,
        plots=False,
    )
)
'''

TOY_ENGINE = """
import torch
import torch.distributed as dist

from ddp_viz.kinds.toy import ToySum


def program(run, rank, scenario, outbox):
    sent = float(rank + scenario.table("toy").value)
    t = torch.tensor([sent], dtype=torch.float64)
    dist.all_reduce(t)
    outbox.add(ToySum(run, rank, sent, float(t.item())), now=True)
    return 1


PROGRAM = program
"""

TOY_FORM = """
from PySide6.QtWidgets import QSpinBox


class ToyFields:
    def __init__(self):
        self.value = QSpinBox()
        self.value.setRange(0, 99)
        self.rows = ()

    def fields(self):
        return {"toy.value": self.value}

    def add_to(self, form):
        form.addRow("Toy value", self.value)
        self.rows = (form.rowCount() - 1,)

    def connect(self, slot):
        self.value.valueChanged.connect(slot)

    def applies(self, scenario):
        return scenario.table("toy") is not None

    def load(self, scenario):
        table = scenario.table("toy")
        self.value.setValue(table.value if table is not None else 1)

    def write(self, raw):
        raw["toy"] = {"value": self.value.value()}


FIELDS = ToyFields
"""

TOY_CLI = """
from ddp_viz.model.registry import CommandHost

COMMANDS = ("toy-sum",)


def add_parsers(sub):
    toy = sub.add_parser("toy-sum", help="add the ranks' numbers, without ranks")
    toy.add_argument("--ranks", type=int, default=3)


def run(args, host: CommandHost):
    print(sum(range(2, 2 + args.ranks)))
    return 7 if host.has_display() in (True, False) else 1
"""

TOY_LESSON = '''
title = "A toy sum"
order = 999
summary = "Every rank adds its number; all get the same sum."
kind = "toy"
scene = "toy_sums"
scenario = "scenario.toml"

[code]
listing = """
dist.all_reduce(t)
"""

[code.phases]
shards = [1]
local = [1]
allreduce = [1]
step = [1]

[phase_text]
shards = "a"
local = "b"
allreduce = "c"
step = "d"

[[question]]
id = "toy-total"
kind = "predict"
prompt = "What sum does rank 0 get back with 3 ranks and value 2?"
explain = "2 + 3 + 4 = 9."
tolerance = 0.0

[question.quantity]
what = "toy_total"
rank = 0
world_size = 3
'''

TOY_SCENARIO = """
world_size = 3

[toy]
value = 2
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy kind in a folder of its own, found the way a process started with
    DDP_VIZ_KINDS_PATH finds it (the engine and its ranks inherit the variable)."""
    kinds = tmp_path / "kinds"
    (kinds / "toy").mkdir(parents=True)
    parts = (("__init__", TOY_INIT), ("engine", TOY_ENGINE), ("form", TOY_FORM), ("cli", TOY_CLI))
    for name, text in parts:
        (kinds / "toy" / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
    lesson = tmp_path / "lessons" / "toy-sum"
    lesson.mkdir(parents=True)
    (lesson / "lesson.toml").write_text(TOY_LESSON, encoding="utf-8")
    (lesson / "lesson.md").write_text("# A toy sum\n", encoding="utf-8")
    (lesson / "scenario.toml").write_text(TOY_SCENARIO, encoding="utf-8")
    monkeypatch.setenv("DDP_VIZ_KINDS_PATH", str(kinds))
    monkeypatch.setenv("DDP_VIZ_LESSONS_PATH", str(lesson.parent))
    registry.add_folder(str(kinds))
    yield lesson
    registry.remove_folder(str(kinds))
    assert registry.get("toy") is None and "toy_sum" not in EVENT_TYPES


def test_the_toy_kind_registers_by_being_a_folder(toy: Path) -> None:
    from ddp_viz.model.lesson import load_lesson_folder
    from ddp_viz.model.scenario import Scenario

    kind = registry.get("toy")
    assert kind is not None and "toy_sum" in EVENT_TYPES
    lesson = load_lesson_folder(toy)
    assert lesson.kind == "toy" and not lesson.trains and not lesson.plots
    s = lesson.scenario()
    assert s.table("toy").value == 2 and s.steps == 1 and not s.trains
    assert Scenario.from_mapping(s.to_dict()) == s  # the table round-trips
    with pytest.raises(Exception, match=r"toy\.value"):
        Scenario.from_mapping({**s.to_dict(), "toy": {"value": -1}})


def test_a_kinds_command_line_part_adds_its_subcommands(toy: Path, capsys) -> None:
    """``ddp-viz toy-sum`` is the toy's own (its folder's cli.py), listed and run by the core's
    command line, which names no kind."""
    from ddp_viz import cli

    assert "toy-sum" in cli.build_parser().format_help()
    assert cli.main(["toy-sum", "--ranks", "3"]) == 7
    assert capsys.readouterr().out == "9\n"


@pytest.mark.gloo
@pytest.mark.timeout(180)
def test_the_toy_kind_runs_headless(toy: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "ddp_viz", "run", "--scenario", str(toy / "scenario.toml")],
        capture_output=True,
        text=True,
        env=env,
        timeout=170,
    )
    assert out.returncode == 0, out.stderr
    # 2 + 3 + 4: every rank's own number, summed by gloo
    for rank, sent in enumerate((2, 3, 4)):
        assert f"toy rank {rank} sent {sent} got 9" in out.stdout
    assert "toy: same sum on every rank" in out.stdout


@pytest.mark.gloo
@pytest.mark.timeout(180)
def test_the_toy_kind_runs_in_the_window(toy: Path, window, qtbot) -> None:
    from tests.qt.test_window_e2e import click_run, lock_guess, start_engine

    window.set_lesson("toy-sum")  # in the course: DDP_VIZ_LESSONS_PATH
    fields = window.form.kind_fields["toy"]
    assert fields.value.value() == 2 and fields.value.isVisibleTo(window.form)
    assert not window.form.table.isVisibleTo(window.form)  # trains nothing: no data rows
    fields.value.setValue(5)  # 5 + 6 + 7
    # an engine of its own: the worker's shared one started before DDP_VIZ_KINDS_PATH named
    # the toy kind, and an engine finds its kinds once, when it starts
    start_engine(qtbot, window, own=True)
    lock_guess(qtbot, window, "toy-total", "18")
    assert not window.form.errors, window.form.errors
    qtbot.waitUntil(lambda: window.run_action.isEnabled(), timeout=30_000)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED
    assert {r: e.total for r, e in rec.parts["toy"].sums.items()} == {0: 18, 1: 18, 2: 18}
    from ddp_viz.model.session import status_text

    assert status_text(rec) == f"Toy run {rec.run}: 3 sums."  # the kind's own line, a sentence
    qtbot.waitUntil(lambda: "toy rank 2: 18" in window.stage.frame().all_text(), timeout=10_000)
    feedback = window.quiz_view.feedback["toy-total"]
    qtbot.waitUntil(lambda: feedback.text().startswith("✓ Right"), timeout=10_000)


def test_a_kinds_parts_are_found_once_per_set_of_folders(toy: Path, monkeypatch) -> None:
    """The window asks for the kinds' Qt parts as each run starts: the folders are looked
    through once, and again when a folder of kinds comes or goes."""
    scans: list[int] = []
    folders = registry.kind_folders
    monkeypatch.setattr(registry, "kind_folders", lambda: scans.append(1) or folders())
    first = registry.load_parts("engine")
    assert "toy" in first and scans
    scans.clear()
    assert registry.load_parts("engine") == first and scans == []
    registry.remove_folder(str(toy.parent.parent / "kinds"))
    assert "toy" not in registry.load_parts("engine")
    registry.add_folder(str(toy.parent.parent / "kinds"))
    assert "toy" in registry.load_parts("engine")
