"""A step's derived values are computed once for the tensors it holds (the watched page asks
on every frame), and again when a rank's tensors are replaced."""

from __future__ import annotations

from ddp_viz.model import protocol, watched_steps
from ddp_viz.model.timeline import record
from ddp_viz.model.watched import latest_full
from tests.conftest import DATA


def test_tensor_rows_are_computed_once_per_steps_tensors(monkeypatch) -> None:
    lines = (DATA / "watched-120-tensors.jsonl").read_text().splitlines()
    rec = record(protocol.decode(line) for line in lines)
    st = latest_full(rec, len(rec.steps) - 1)
    assert st is not None
    calls = []
    norm = watched_steps.tensor_norm
    monkeypatch.setattr(watched_steps, "tensor_norm", lambda v: calls.append(1) or norm(v))
    first = watched_steps.tensor_rows(rec, st)
    assert len(calls) >= len(rec.params)  # computed
    calls.clear()
    assert watched_steps.tensor_rows(rec, st) is first and not calls  # asked again: kept
    # a rank's local gradients replaced (as a new event replaces them): computed anew
    rs = st.ranks[0]
    rs.local = {**rs.local}
    again = watched_steps.tensor_rows(rec, st)
    assert calls and again is not first and again == first
