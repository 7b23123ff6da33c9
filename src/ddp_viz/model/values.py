"""One scenario value checked on its own: a flag, a whole number in a range, a choice. Pure;
the error names the field, as every scenario message does."""

from __future__ import annotations

from typing import Any

from ddp_viz.model.errors import ScenarioError


def flag(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ScenarioError(key, f"must be true or false, got {value!r}")


def whole(key: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ScenarioError(key, f"must be a whole number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ScenarioError(key, f"must be a whole number, got {value!r}") from None
    if not number.is_integer() or not low <= number <= high:
        raise ScenarioError(key, f"must be a whole number from {low} to {high:,}, got {value}")
    return int(number)


def choice(key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ScenarioError(key, f"must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)
