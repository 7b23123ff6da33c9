"""Structural validation of decoded JSON against a dataclass's annotations, compiled once per
class: the protocol's events and commands are checked field by field without a schema library."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any

from ddp_viz.model.recording_format import NON_FINITE


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
        kwargs[fname] = value if norm is None else norm(value)
    return kwargs


Check = Callable[[Any], bool]
# None: the value is kept as decoded. JSON decoding made every list and dict afresh, so the
# common case (floats that are already floats, strings, Any) needs no copy
Norm = Callable[[Any], Any] | None
_COMPILED: dict[type, list[tuple[str, bool, Check, Norm]]] = {}
_NUMBERS = frozenset((float, int))
_FLOAT = frozenset((float,))


def _number(v: Any) -> bool:
    """A JSON number, or the word the format writes for one that is not finite."""
    return type(v) in _NUMBERS or (type(v) is str and v in NON_FINITE)


def _numbers(v: Any) -> bool:
    """A list of JSON numbers, with the per-item work done by ``map`` in C: tensors and spans
    come as lists of floats and are most of what a window decodes."""
    return type(v) is list and (set(map(type, v)) <= _NUMBERS or all(map(_number, v)))


def _floats(v: list) -> list:
    # float() reads the words "NaN", "Infinity" and "-Infinity" too
    return v if set(map(type, v)) <= _FLOAT else list(map(float, v))


def _compile(tp: Any) -> tuple[Check, Norm]:
    """A checker and a normaliser for one annotation (ints where floats are declared
    become floats, so equality and formatting behave)."""
    if tp is Any:
        return (lambda v: True), None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        parts = [_compile(a) for a in args]
        by_type = _by_json_type(args, parts)
        if by_type is not None:  # each member its own JSON type: one look-up, not a search
            return (
                lambda v: (p := by_type.get(type(v))) is not None and p[0](v),
                lambda v: v if (n := by_type[type(v)][1]) is None else n(v),
            )

        def check_union(v: Any) -> bool:
            return any(c(v) for c, _ in parts)

        def norm_union(v: Any) -> Any:
            for c, n in parts:
                if c(v):
                    return v if n is None else n(v)
            return v

        return check_union, norm_union
    if tp is type(None):
        return (lambda v: v is None), None
    if origin is typing.Literal:
        words = typing.get_args(tp)
        return (lambda v: any(type(v) is type(w) and v == w for w in words)), None
    if typing.is_typeddict(tp):
        return _compile_typeddict(tp)
    if tp is float:
        return _number, float
    if tp is int:
        return (lambda v: type(v) is int), None
    if tp is str:
        return (lambda v: type(v) is str), None
    if origin is list:
        return _compile_list(typing.get_args(tp)[0])
    if origin is dict:
        key, item = typing.get_args(tp)
        ck, _ = _compile(key)
        ci, ni = _compile(item)
        if item is Any:
            if key is str:
                return (lambda v: type(v) is dict and set(map(type, v)) <= {str}), None
            return (lambda v: type(v) is dict and all(map(ck, v))), None
        return (
            lambda v: type(v) is dict and all(map(ck, v)) and all(map(ci, v.values())),
            None if ni is None else (lambda v: {k: ni(x) for k, x in v.items()}),
        )
    return (lambda v: isinstance(v, tp)), None


def _by_json_type(args: tuple, parts: list[tuple[Check, Norm]]) -> dict[type, tuple] | None:
    """A union whose members each decode from one JSON type of their own (a tensor: a list of
    numbers or a summary object), keyed by that type; None for any other union."""
    kinds = [_JSON_TYPE.get(typing.get_origin(a) or a) or (dict if typing.is_typeddict(a) else None)
             for a in args]  # fmt: skip
    if None in kinds or len(set(kinds)) < len(kinds):
        return None
    return dict(zip(kinds, parts, strict=True))


_JSON_TYPE = {list: list, dict: dict, str: str, type(None): type(None)}


def _compile_list(item: Any) -> tuple[Check, Norm]:
    if item is float:  # the hot path: tensors and spans as lists of numbers
        return _numbers, _floats
    if item is Any:
        return (lambda v: type(v) is list), None
    ci, ni = _compile(item)
    return (
        lambda v: type(v) is list and all(map(ci, v)),
        None if ni is None else (lambda v: [ni(x) for x in v]),
    )


def _compile_typeddict(tp: Any) -> tuple[Check, Norm]:
    """A JSON object with the keys a TypedDict declares (keys it does not know are kept)."""
    hints = typing.get_type_hints(tp)
    required = frozenset(tp.__required_keys__)
    parts = {k: _compile(t) for k, t in hints.items()}

    def check(v: Any) -> bool:
        return (
            type(v) is dict
            and required <= v.keys()
            and all(parts[k][0](x) for k, x in v.items() if k in parts)
        )

    normed = [(k, n) for k, (_, n) in parts.items() if n is not None]

    def norm(v: dict) -> dict:
        # in place: JSON decoding made this dict afresh, and rebuilding it for every tensor of
        # every rank was most of decoding a step captured in full
        for k, n in normed:
            if k in v:
                v[k] = n(v[k])
        return v

    return check, norm


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
