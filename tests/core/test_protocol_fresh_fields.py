"""``protocol.to_dict`` and ``encode`` with their per-class cache of field names empty.

The cache is filled once per class for the whole process, so a test run that imports the
app has filled it long before any test here: these tests empty it first, so the code that
fills it runs (and a wrong field list shows in the line every rank writes)."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model import protocol


@pytest.fixture(autouse=True)
def fresh_field_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "_FIELD_NAMES", {})


def test_a_step_without_values_as_every_rank_writes_it() -> None:
    event = protocol.LocalGrad(2, 7, 3, 0.25, {}, [["w", "b"]], [4, 5], 1, False)
    assert protocol.to_dict(event) == {
        "event": "local_grad",
        "run": 2,
        "step": 7,
        "rank": 3,
        "loss": 0.25,
        "grads": {},
        "buckets": [["w", "b"]],
        "rows": [4, 5],
        "epoch": 1,
        "values": False,
    }


def test_the_kind_comes_first_and_every_field_in_declared_order() -> None:
    event = protocol.Timing(1, 4, 2, {"forward": [[0.5, 0.75]]}, [["w", 0.6]], [])
    line = protocol.encode(event)
    assert line.startswith('{"event":"timing",')
    assert list(json.loads(line)) == ["event", "run", "step", "rank", "spans", "ready", "buckets"]
    assert protocol.line_kind(line.encode()) == "timing"


def test_two_kinds_in_turn_keep_their_own_fields() -> None:
    timing = protocol.Timing(1, 0, 0, {})
    local = protocol.LocalGrad(1, 0, 0, 1.5, {})
    assert set(protocol.to_dict(timing)) == {
        "event",
        "run",
        "step",
        "rank",
        "spans",
        "ready",
        "buckets",
    }
    assert protocol.to_dict(local)["loss"] == 1.5
    assert "spans" not in protocol.to_dict(local)
    assert protocol.to_dict(timing)["event"] == "timing"
