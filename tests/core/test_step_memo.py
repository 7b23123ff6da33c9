"""A step's derived values are computed once for the tensors it holds (the watched page asks
on every frame), and again when a rank's tensors are replaced."""

from __future__ import annotations

from ddp_viz.kinds.watched import steps as watched_steps
from ddp_viz.kinds.watched.run import latest_full
from ddp_viz.model import protocol, step_memo
from ddp_viz.model.timeline import record
from tests.conftest import DATA


def test_tensor_rows_are_computed_once_per_steps_tensors(monkeypatch) -> None:
    calls = []
    norm = step_memo.tensor_norm
    monkeypatch.setattr(step_memo, "tensor_norm", lambda v: calls.append(1) or norm(v))
    lines = (DATA / "watched-120-tensors.jsonl").read_text().splitlines()
    rec = record(protocol.decode(line) for line in lines)
    st = latest_full(rec, len(rec.steps) - 1)
    assert st is not None
    assert len(calls) >= len(rec.params)  # computed as the gradients arrived
    calls.clear()
    first = watched_steps.tensor_rows(rec, st)
    assert not calls  # the rows read the norms computed then
    assert watched_steps.tensor_rows(rec, st) is first  # asked again: kept
    # a rank's local gradients replaced (as a new event replaces them): computed anew
    rs = st.ranks[0]
    rs.local = {**rs.local}
    again = watched_steps.tensor_rows(rec, st)
    assert len(calls) == len(rs.local) and again is not first and again == first
