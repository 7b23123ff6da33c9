"""Structural validation of decoded JSON against a dataclass's annotations, compiled once per
class: the protocol's events and commands are checked field by field without a schema library."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any


class ProtocolError(ValueError):
    """A line that is not a valid event (or command)."""


def checked_fields(cls: type, data: dict[str, Any], name: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for fname, required, check, norm in _fields_of(cls):
        if fname not in data:
            if required:
                raise ProtocolError(f"{name}: missing field {fname!r}")
            continue
        value = data[fname]
        if not check(value):
            raise ProtocolError(f"{name}: field {fname!r} has the wrong type ({value!r:.80})")
        kwargs[fname] = norm(value)
    return kwargs


Check = Callable[[Any], bool]
Norm = Callable[[Any], Any]
_COMPILED: dict[type, list[tuple[str, bool, Check, Norm]]] = {}


def _compile(tp: Any) -> tuple[Check, Norm]:
    """A checker and a normaliser for one annotation (ints where floats are declared
    become floats, so equality and formatting behave)."""
    if tp is Any:
        return (lambda v: True), (lambda v: v)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [_compile(a) for a in typing.get_args(tp)]

        def check_union(v: Any) -> bool:
            return any(c(v) for c, _ in parts)

        def norm_union(v: Any) -> Any:
            for c, n in parts:
                if c(v):
                    return n(v)
            return v

        return check_union, norm_union
    if tp is type(None):
        return (lambda v: v is None), (lambda v: v)
    if tp is float:
        return (lambda v: type(v) in (float, int)), float
    if tp is int:
        return (lambda v: type(v) is int), (lambda v: v)
    if tp is str:
        return (lambda v: type(v) is str), (lambda v: v)
    if origin is list:
        (item,) = typing.get_args(tp)
        ci, ni = _compile(item)
        if item is float:  # the hot path: tensors as lists of numbers
            return (
                lambda v: type(v) is list and all(type(x) in (float, int) for x in v),
                lambda v: [float(x) for x in v],
            )
        return (
            lambda v: type(v) is list and all(ci(x) for x in v),
            lambda v: [ni(x) for x in v],
        )
    if origin is dict:
        key, item = typing.get_args(tp)
        ck, _ = _compile(key)
        ci, ni = _compile(item)
        return (
            lambda v: type(v) is dict and all(ck(k) and ci(x) for k, x in v.items()),
            lambda v: {k: ni(x) for k, x in v.items()},
        )
    return (lambda v: isinstance(v, tp)), (lambda v: v)


def _fields_of(cls: type) -> list[tuple[str, bool, Check, Norm]]:
    if cls not in _COMPILED:
        hints = typing.get_type_hints(cls)
        _COMPILED[cls] = [
            (
                f.name,
                f.default is MISSING and f.default_factory is MISSING,
                *_compile(hints[f.name]),
            )
            for f in fields(cls)
        ]
    return _COMPILED[cls]
