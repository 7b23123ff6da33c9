"""A training scenario: the data rows and the knobs of one DDP run, and their validation.

Pure model layer: imports neither Qt nor torch, so the window, the CLI and the engine all
validate the same way, before any process starts.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ddp_viz.model import registry
from ddp_viz.model.dataspec import DataSpec, TrainSpec
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.launchspec import LaunchSpec
from ddp_viz.model.modelspec import DDPSpec, ModelSpec
from ddp_viz.model.values import integer, number

MAX_WORLD_SIZE = 8
MAX_STEPS = 100_000
MAX_ROWS = 10_000
FIELDS = ("x", "y", "world_size", "steps", "lr", "init_weight", "init_bias")
# [model] and [ddp]: see ddp_viz.model.modelspec; [data] and [train]: ddp_viz.model.dataspec
CORE_TABLES: dict[str, Any] = {
    "model": ModelSpec,
    "ddp": DDPSpec,
    "data": DataSpec,
    "train": TrainSpec,
    "launch": LaunchSpec,
}


def table_specs() -> dict[str, Any]:
    """Every table a scenario may hold: the core's and each kind of run's own."""
    return {**CORE_TABLES, **registry.tables()}


def keys() -> tuple[str, ...]:
    return FIELDS + tuple(table_specs())


@dataclass(frozen=True)
class Scenario:
    """A model (``nn.Linear(1, 1)`` unless ``[model]`` says otherwise) trained with mean-squared
    error and SGD on contiguous shards, wrapped in DDP as ``[ddp]`` says."""

    x: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0)
    y: tuple[float, ...] = (3.0, 5.0, 7.0, 9.0)
    world_size: int = 2
    steps: int = 1
    lr: float = 0.01
    init_weight: float = 0.5
    init_bias: float = 0.0
    model: ModelSpec = field(default_factory=ModelSpec)
    ddp: DDPSpec = field(default_factory=DDPSpec)
    data: DataSpec = field(default_factory=DataSpec)
    train: TrainSpec = field(default_factory=TrainSpec)
    launch: LaunchSpec = field(default_factory=LaunchSpec)
    # the tables of the kinds of run by table name (see ddp_viz.model.registry)
    kinds: Mapping[str, Any] = field(default_factory=dict)
    # Not a TOML key: where the scenario came from, for messages.
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        validate(self)

    # --- construction ------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "") -> Scenario:
        allowed = keys()
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise ScenarioError(unknown[0], f"unknown key; allowed keys are {', '.join(allowed)}")
        values: dict[str, Any] = {}
        for key in allowed:
            if key in data:
                values[key] = _coerce(key, data[key])
        values = _gather_kinds(values)
        spec: DataSpec = values.get("data", DataSpec())
        train: TrainSpec = values.get("train", TrainSpec())
        rows = len(values.get("x", cls.x))
        world = values.get("world_size", cls.world_size)
        fixed = _fixed_steps(values["kinds"], world) if isinstance(world, int) else None
        if fixed is not None and "steps" not in values:
            values["steps"] = fixed  # the kind's table sets the run's length
        if spec.epochs and "steps" not in values and isinstance(world, int) and 1 <= world <= rows:
            # epochs fix the length; validate checks
            values["steps"] = max(1, epoch_steps(spec, train, rows, world))
        return cls(**values, source=source)

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ScenarioError("scenario", f"file not found: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError("scenario", f"cannot read {path}: {exc}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError("scenario", f"{path} is not valid TOML ({exc})") from None
        return cls.from_mapping(data, source=str(path))

    def with_changes(self, **changes: Any) -> Scenario:
        """A copy with some fields replaced; values may be text (from a form or a CLI flag)."""
        coerced = {k: _coerce(k, v) for k, v in changes.items() if v is not None}
        coerced = _gather_kinds(coerced, self.kinds)
        kinds = coerced["kinds"]
        fixed = _fixed_steps(kinds, coerced.get("world_size", self.world_size))
        if fixed is not None and changes.get("steps") is None:
            coerced["steps"] = fixed
        elif "steps" in coerced and self.data.epochs and "data" not in coerced:
            # an explicit step count (--steps) wins over [data] epochs
            coerced["data"] = replace(self.data, epochs=0)
        elif self.data.epochs and "steps" not in coerced:
            # world size or rows changed: the same epochs make a different number of steps
            data = coerced.get("data", self.data)
            train = coerced.get("train", self.train)
            rows = len(coerced.get("x", self.x))
            world = coerced.get("world_size", self.world_size)
            if data.epochs and 1 <= world <= rows:
                coerced["steps"] = max(1, epoch_steps(data, train, rows, world))
        return replace(self, **coerced)

    # --- derived -----------------------------------------------------------------------------
    def table(self, name: str) -> Any:
        """A kind's table (``[name]``), or None when the scenario has none."""
        return self.kinds.get(name)

    @property
    def trains(self) -> bool:
        """False for a run that trains nothing (a kind's table says so): no rows, no steps of
        DDP."""
        return all(spec.trains for spec in self.kinds.values())

    @property
    def rows(self) -> int:
        return len(self.x)

    def shards(self) -> list[list[int]]:
        """Row indices per rank: contiguous blocks, the first ``rows % world_size`` one longer."""
        base, extra = divmod(self.rows, self.world_size)
        out: list[list[int]] = []
        start = 0
        for r in range(self.world_size):
            size = base + (1 if r < extra else 0)
            out.append(list(range(start, start + size)))
            start += size
        return out

    @property
    def equal_shards(self) -> bool:
        return self.rows % self.world_size == 0

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in FIELDS}
        d["x"] = list(self.x)
        d["y"] = list(self.y)
        d["model"] = self.model.to_dict()
        d["ddp"] = self.ddp.to_dict()
        d["data"] = self.data.to_dict()
        d["train"] = self.train.to_dict()
        d["launch"] = self.launch.to_dict()
        for name, spec in self.kinds.items():
            d[name] = spec.to_dict()
        return d

    def to_toml(self) -> str:
        def num(v: float) -> str:
            return repr(float(v))

        return (
            f"x = [{', '.join(num(v) for v in self.x)}]\n"
            f"y = [{', '.join(num(v) for v in self.y)}]\n"
            f"world_size = {self.world_size}\n"
            f"steps = {self.steps}\n"
            f"lr = {num(self.lr)}\n"
            f"init_weight = {num(self.init_weight)}\n"
            f"init_bias = {num(self.init_bias)}\n"
            f"\n[model]\n{_toml_table(self.model.to_dict())}"
            f"\n[ddp]\n{_toml_table(self.ddp.to_dict())}"
            f"\n[data]\n{_toml_table(self.data.to_dict())}"
            f"\n[train]\n{_toml_table(self.train.to_dict())}"
            f"\n[launch]\n{_toml_table(self.launch.to_dict())}"
            + "".join(f"\n[{n}]\n{_toml_table(t.to_dict())}" for n, t in self.kinds.items())
        )


def _gather_kinds(values: dict[str, Any], kinds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``values`` with the kinds' tables moved into ``kinds`` (a read-only mapping)."""
    tables = registry.tables()
    gathered = dict(kinds or {})
    gathered.update({k: v for k, v in values.items() if k in tables})
    out = {k: v for k, v in values.items() if k not in tables}
    out["kinds"] = gathered
    return out


def _fixed_steps(kinds: Mapping[str, Any], world: int) -> int | None:
    """The run's length when a kind's table sets it (the ring's steps)."""
    return next((n for t in kinds.values() if (n := t.fixed_steps(world)) is not None), None)


def _toml_table(d: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    return "".join(f"{k} = {value(v)}\n" for k, v in d.items())


# --- coercion and validation ----------------------------------------------------------------
def _coerce(key: str, value: Any) -> Any:
    if key in ("x", "y"):
        if isinstance(value, str):
            value = [v for v in value.replace(",", " ").split() if v]
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            raise ScenarioError(key, "must be a list of numbers, one per data row")
        return tuple(number(f"{key}[{i}]", v) for i, v in enumerate(value))
    if key in ("world_size", "steps"):
        return integer(key, value)
    if key in ("lr", "init_weight", "init_bias"):
        return number(key, value)
    specs = table_specs()
    if key in specs:
        kind = specs[key]
        if isinstance(value, kind):
            return value
        return kind.from_mapping(value)
    raise ScenarioError(key, f"unknown key; allowed keys are {', '.join(FIELDS)}")


def _range(key: str, value: Any) -> None:
    """Rules about one field alone (types already checked)."""
    if key == "world_size" and not 1 <= value <= MAX_WORLD_SIZE:
        raise ScenarioError(key, f"must be between 1 and {MAX_WORLD_SIZE}, got {value}")
    if key == "steps" and not 1 <= value <= MAX_STEPS:
        raise ScenarioError(key, f"must be between 1 and {MAX_STEPS:,}, got {value}")
    if key == "lr" and value <= 0:
        raise ScenarioError(key, f"must be greater than 0, got {value:g}")
    if key == "x" and len(value) == 0:
        raise ScenarioError(key, "needs at least one data row")
    if key == "x" and len(value) > MAX_ROWS:
        raise ScenarioError(key, f"at most {MAX_ROWS} rows, got {len(value)}")


def epoch_steps(data: DataSpec, train: TrainSpec, rows: int, world: int) -> int:
    """Optimizer steps in a run whose length ``[data] epochs`` sets: every ``accumulate``
    batches make one step, counted across epochs; a tail of fewer is never stepped, as in a
    loop that steps when its batch counter reaches a multiple of ``accumulate``."""
    return data.run_steps(rows, world) // train.accumulate


def validate(s: Scenario) -> None:
    """Raise :class:`ScenarioError` naming the first offending field."""
    for key in FIELDS:
        _range(key, _coerce(key, getattr(s, key)))
    if len(s.y) != len(s.x):
        raise ScenarioError("y", f"needs one value per x row: {len(s.x)} x, {len(s.y)} y")
    if s.trains and s.world_size > len(s.x):
        raise ScenarioError(
            "world_size",
            f"{s.world_size} ranks need at least {s.world_size} data rows "
            f"(every rank needs a shard); there are {len(s.x)}",
        )
    for spec in s.kinds.values():  # what each kind of run asks of the rest of the scenario
        spec.check_scenario(s)
    if not s.trains:
        return  # no training: the data rows and [data] / [train] are not used
    for kind in registry.kinds():  # what a kind without a table asks of the scenario
        if kind.check_scenario is not None:
            kind.check_scenario(s)
    if s.data.epochs and s.world_size <= len(s.x):
        micro = s.data.run_steps(len(s.x), s.world_size)
        if micro < s.train.accumulate:
            raise ScenarioError(
                "train.accumulate",
                f"[data] epochs = {s.data.epochs} give each rank {micro} batches, fewer than "
                f"the {s.train.accumulate} micro-batches of one optimizer step",
            )
        steps = micro // s.train.accumulate  # a tail of fewer than k batches is never stepped
        if s.steps != steps:
            per_epoch = s.data.steps_per_epoch(len(s.x), s.world_size)
            how = f"{per_epoch} batches per epoch"
            if s.train.accumulate > 1:
                how += f", {s.train.accumulate} per optimizer step"
            raise ScenarioError(
                "steps",
                f"[data] epochs = {s.data.epochs} makes this run {steps} steps long "
                f"({how}); leave steps out or change epochs",
            )
    if s.data.batch_size and not s.data.distributed:
        raise ScenarioError(
            "data.batch_size",
            'batches come from a sampler: set [data] sampler = "distributed" (contiguous blocks '
            "train on the whole block every step)",
        )


def field_errors(data: Mapping[str, Any]) -> dict[str, str]:
    """Every problem in form input at once, keyed by field (``x[2]`` names a cell).

    Checks each field on its own first, so several fields can be marked together, then the
    rules that tie fields together.
    """
    errors: dict[str, str] = {}
    allowed = keys()
    for key in sorted(set(data) - set(allowed)):
        errors[key] = f"unknown key; allowed keys are {', '.join(allowed)}"
    for key in allowed:
        if key not in data:
            continue
        if key in ("x", "y") and isinstance(data[key], Sequence) and not isinstance(data[key], str):
            for i, v in enumerate(data[key]):
                try:
                    number(f"{key}[{i}]", v)
                except ScenarioError as exc:
                    errors[exc.field] = exc.message
            if key == "x" and not data[key]:
                errors["x"] = "needs at least one data row"
            continue
        try:
            _range(key, _coerce(key, data[key]))
        except ScenarioError as exc:
            errors[exc.field] = exc.message
    if not errors:
        try:
            Scenario.from_mapping(data)
        except ScenarioError as exc:
            errors[exc.field] = exc.message
    return errors


def default_scenario() -> Scenario:
    """The default lesson's scenario."""
    from ddp_viz.model.assets import default_scenario_path

    return Scenario.load(default_scenario_path())
