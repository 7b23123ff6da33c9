"""The `[launch]` table and the line that says what every rank read from its launcher, and the
colour themes: each rank's colour and marker, the zoom's smallest size, dark or light. Expected
values are written here from the inputs."""

from __future__ import annotations

import pytest

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.launchspec import LaunchEnv, LaunchSpec, launch_line
from ddp_viz.model.theme import THEMES, Theme, load_theme
from ddp_viz.model.timeline import RunRecord


def test_the_launch_table_reads_its_one_key_and_defaults_to_a_file_store() -> None:
    assert LaunchSpec.from_mapping({}) == LaunchSpec("file")
    assert LaunchSpec.from_mapping({"init_method": "env"}).to_dict() == {"init_method": "env"}
    with pytest.raises(ScenarioError) as caught:
        LaunchSpec.from_mapping({"init_method": "tcp"})
    assert caught.value.field == "launch.init_method"
    with pytest.raises(ScenarioError) as caught:
        LaunchSpec.from_mapping({"port": 1})
    assert caught.value.field.startswith("launch")


def env(rank: int, method: str = "env://") -> LaunchEnv:
    return LaunchEnv(
        run=1,
        rank=rank,
        init_method=method,
        env={"RANK": str(rank), "WORLD_SIZE": "3", "LOCAL_RANK": str(rank), "MASTER_PORT": "7"},
    )


def test_the_launch_line_says_the_shared_variables_once_and_each_ranks_own() -> None:
    rec = RunRecord()
    assert launch_line(rec) == ""
    rec.launch = {2: env(2, "other://"), 0: env(0), 1: env(1)}
    assert launch_line(rec) == (
        "launched with init_method=env:// · WORLD_SIZE=3 MASTER_PORT=7 · "
        "rank 0: RANK=0 LOCAL_RANK=0; rank 1: RANK=1 LOCAL_RANK=1; rank 2: RANK=2 LOCAL_RANK=2"
    )


def theme(**changes) -> Theme:
    base = dict(
        name="t",
        window="#808080",
        panel="#000",
        text="#000",
        muted="#000",
        grid="#000",
        accent="#000",
        ok="#000",
        bad="#000",
        highlight="#000",
        ranks=("red", "green", "blue"),
        markers=("o", "s"),
        font_px=12,
        line_px=2,
    )
    return Theme(**(base | changes))


def test_ranks_take_the_themes_colours_and_markers_in_turn() -> None:
    t = theme()
    assert [t.rank_color(r) for r in range(7)] == ["red", "green", "blue"] * 2 + ["red"]
    assert [t.rank_marker(r) for r in range(5)] == ["o", "s", "o", "s", "o"]


def test_a_zoom_scales_the_font_rounded_and_never_below_8_px() -> None:
    assert theme().scaled(1.5).font_px == 18
    assert theme().scaled(1.3).font_px == 16  # 15.6 rounded
    assert theme().scaled(0.5).font_px == 8  # 6 is too small to read
    assert theme().scaled(0.7).font_px == 8  # 8.4 rounded down is the floor itself
    assert theme().scaled(0.75).font_px == 9
    assert theme().scaled(2).line_px == 2


@pytest.mark.parametrize(
    ("window", "dark"),
    [
        ("#000000", True),
        ("#ffffff", False),
        ("#7f7f7f", True),  # luma 127
        ("#818181", False),  # luma 129
        ("#ff0000", True),  # 0.299 * 255: red is dark
        ("#00ff00", False),  # 0.587 * 255: green is light
        ("#0000ff", True),
        ("#00c0c0", False),  # 0.701 * 192 = 134.6
        ("#00b0b0", True),  # 0.701 * 176 = 123.4
        ("#c0c000", False),  # 0.886 * 192 = 170
        ("#909000", True),  # 0.886 * 144 = 127.6
    ],
)
def test_a_theme_is_dark_when_its_windows_luma_is_below_half(window, dark) -> None:
    assert theme(window=window).dark is dark


def test_the_shipped_themes_load_and_an_unknown_one_is_named() -> None:
    assert THEMES == ("light", "dark", "projector")
    loaded = {name: load_theme(name) for name in THEMES}
    assert not loaded["light"].dark and loaded["dark"].dark
    assert all(isinstance(t.ranks, tuple) and isinstance(t.markers, tuple) for t in loaded.values())
    assert all(t.name == name for name, t in loaded.items())
    with pytest.raises(
        ValueError, match="unknown theme 'neon'; choose one of light, dark, projector"
    ):
        load_theme("neon")
