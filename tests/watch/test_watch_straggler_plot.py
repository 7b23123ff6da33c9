"""A watched run whose rank 1 sleeps before each forward: the plot beside the page shows it as
the straggler (issue 33, 13). The plot measured forward → first bucket, which a delay before
forward never touches, so both ranks showed 2–5 ms while the text said the others waited
~25 ms for rank 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import DATA

DELAY_S = 0.020  # rank 1 sleeps this long before every forward


def delayed(tmp_path: Path) -> tuple[Path, dict[int, dict[int, float]]]:
    """The watched recording with every timestamp of rank 1 moved DELAY_S later (it starts
    each step that much after rank 0), and each rank's expected point per step, worked out
    here from the raw lines: its first bucket's launch, in ms after the first rank's."""
    lines, launched = [], {}
    for line in (DATA / "watched-2-ranks.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "timing":
            if e["rank"] == 1:
                shift = lambda t: t + DELAY_S  # noqa: E731
                e["spans"] = {
                    k: [[shift(a), shift(b)] for a, b in v] for k, v in e["spans"].items()
                }
                e["ready"] = [[n, shift(t)] for n, t in e["ready"]]
                for b in e["buckets"]:
                    b["launched"], b["finished"] = shift(b["launched"]), shift(b["finished"])
            launched.setdefault(e["step"], {})[e["rank"]] = min(b["launched"] for b in e["buckets"])
        lines.append(json.dumps(e))
    path = tmp_path / "watched-slow-rank-1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    want = {
        s: {r: (at - min(got.values())) * 1e3 for r, at in got.items()}
        for s, got in launched.items()
    }
    return path, want


def test_the_straggler_before_forward_is_the_line_above(make_window, tmp_path) -> None:
    path, want = delayed(tmp_path)
    window = make_window()
    window.file_actions.open_run(path)
    plots = window.plots
    assert "all-reduce" in plots.loss_plot.getPlotItem().titleLabel.text
    steps = sorted(want)
    curves = {r: plots._curves[f"loss{r}"].getData() for r in (0, 1)}
    for r in (0, 1):
        xs, ys = curves[r]
        assert list(xs) == [s + 1 for s in steps]
        assert list(ys) == pytest.approx([want[s][r] for s in steps], abs=1e-6)
    for i in range(len(steps)):  # rank 1's line is above rank 0's at every step, rank 0 at 0
        assert curves[0][1][i] == 0.0 and curves[1][1][i] > DELAY_S * 1e3 / 2
    # and the page's own words agree with the plot: the others waited for rank 1
    assert "for rank 1" in window.stage.frame().all_text()
