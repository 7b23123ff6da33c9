"""One scenario value checked on its own: a flag, a whole number in a range, a choice. Pure;
the error names the field, as every scenario message does."""

from __future__ import annotations

import math
from collections.abc import Mapping
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


def number(key: str, value: Any, what: str = "a number") -> float:
    if isinstance(value, bool):
        raise ScenarioError(key, f"must be {what}, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ScenarioError(key, f"must be {what}, got an empty value")
        try:
            value = float(text)
        except ValueError:
            hint = " (use a dot for decimals: 0.01)" if "," in text else ""
            raise ScenarioError(key, f"must be {what}, got {text!r}{hint}") from None
    if not isinstance(value, int | float):
        raise ScenarioError(key, f"must be {what}, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ScenarioError(key, f"must be a finite number, got {value}")
    return value


def integer(key: str, value: Any) -> int:
    found = number(key, value, "a whole number")
    if not found.is_integer():
        raise ScenarioError(key, f"must be a whole number, got {found:g}")
    return int(found)


def wholes(
    table: Mapping[str, Any], prefix: str, ranges: tuple[tuple[str, int, int], ...]
) -> dict[str, int]:
    """The whole-number keys of a table that it holds, each checked against its range
    (``(key, low, high)``); errors name ``prefix.key``."""
    return {
        key: whole(f"{prefix}.{key}", table[key], low, high)
        for key, low, high in ranges
        if key in table
    }


def rate(key: str, value: Any, high: float) -> float:
    """A learning rate: a number above 0 and at most ``high``."""
    found = number(key, value)
    if not 0 < found <= high:
        raise ScenarioError(key, f"must be above 0 and at most {high:g}, got {found:g}")
    return found
