"""A lesson's listing as the window shows it: `${choose:…}` texts put in for the run's value,
`${key}` values filled from its scenario, and the lines each phase highlights, dims and keeps
within a section, written out by hand for a listing built here. And a lesson folder read field
by field against its own TOML, each broken folder named in so many words."""

from __future__ import annotations

import shutil
import tomllib

import pytest

from ddp_viz.model import registry
from ddp_viz.model.assets import asset
from ddp_viz.model.course import load_course
from ddp_viz.model.lesson import Lesson, LessonError, load_lesson_folder
from ddp_viz.model.scenario import Scenario

CODE = "\n".join(
    [
        "a = 1",  # 1
        "${choose:train.no_sync}",  # 2: one line, or two for backward_only
        "b = ${lr}",  # 3
        "c = ${model.kind}  # x",  # 4
        "d = ${world_size} ${nowhere.key}",  # 5
    ]
)
CHOOSE = {
    "train.no_sync": {
        "none": "loss.backward()",
        "backward_only": "with model.no_sync():\n    loss.backward()\n",
    }
}


def lesson(**kw) -> Lesson:
    base = dict(id="mine", title="Mine", markdown="", code=CODE, choose=CHOOSE)
    return Lesson(**(base | kw))


def scenario(no_sync: str = "none", **changes) -> dict:
    d = Scenario().to_dict()
    d["train"] = {**d["train"], "no_sync": no_sync}
    return d | changes


def test_a_choice_is_put_in_for_the_runs_value_and_values_are_filled() -> None:
    one = lesson()
    assert one.listing_for(scenario()) == CODE.replace("${choose:train.no_sync}", "loss.backward()")
    assert one.listing_for(scenario("backward_only")).splitlines()[1:3] == [
        "with model.no_sync():",
        "    loss.backward()",
    ]
    assert one.code_with(scenario("backward_only", lr=0.25, world_size=3)).splitlines() == [
        "a = 1",
        "with model.no_sync():",
        "    loss.backward()",
        "b = 0.25",
        "c = linear  # x",
        "d = 3 None",
    ]
    assert lesson(choose={}).listing_for(scenario()) == CODE  # nothing to choose: as written
    assert lesson(choose={}, code="b = ${lr}").code_with(scenario(lr=1e-05)) == "b = 1e-05"


def test_the_default_scenario_is_the_lessons_own() -> None:
    plain = Scenario().to_dict()
    assert lesson().code_with(None) == lesson().code_with(plain)
    assert lesson().listing_for(None) == lesson().listing_for(plain)


def test_a_value_without_a_text_says_so_and_flags_are_tomls_words() -> None:
    assert lesson().listing_for(scenario("forward_and_backward")).splitlines()[1] == (
        "# (no listing for train.no_sync = forward_and_backward)"
    )
    flags = lesson(
        code="x = ${choose:train.scale_loss} # end",
        choose={"train.scale_loss": {"true": "scaled", "false": "raw"}},
    )
    d = scenario()
    assert flags.listing_for(d) == "x = scaled # end"
    d["train"]["scale_loss"] = False
    assert flags.listing_for(d) == "x = raw # end"
    empty = lesson(code="x${choose:train.no_sync}y", choose={"train.no_sync": {"none": ""}})
    assert empty.listing_for(scenario()) == "xy"


def test_a_text_that_chooses_again_is_filled_five_levels_deep_and_no_more() -> None:
    again = lesson(code="${choose:k.a}", choose={"k.a": {"None": "x${choose:k.a}"}})
    assert again.listing_for(scenario()) == "xxxxx${choose:k.a}"


def test_a_chosen_texts_later_lines_keep_the_indent_of_its_line() -> None:
    nested = lesson(code="for s in steps:\n    ${choose:train.no_sync}\n    step()")
    assert nested.listing_for(scenario("backward_only")).splitlines() == [
        "for s in steps:",
        "    with model.no_sync():",
        "        loss.backward()",
        "    step()",
    ]


def test_a_phase_highlights_its_lines_as_shown_and_every_line_holding_its_text() -> None:
    marks = lesson(highlight={"local": [1, 2, "b ="], "step": [5, 0, 99], "none": []})
    assert marks.lines_for("local", scenario()) == [1, 2, 3]
    assert marks.lines_for("local", scenario("backward_only")) == [1, 2, 3, 4]
    assert marks.lines_for("step", scenario("backward_only")) == [6]  # 0 and 99 are no lines
    assert marks.lines_for("none", scenario()) == []
    assert marks.lines_for("gone", scenario()) == []
    text_only = lesson(highlight={"local": ["backward()"]})
    assert text_only.lines_for("local", scenario("backward_only")) == [3]
    assert text_only.lines_for("local", scenario()) == [2]
    plain = lesson(choose={}, code="a\nb\nc", highlight={"local": [3, 1, 3, 9]})
    assert plain.lines_for("local", scenario()) == [1, 3]  # sorted, once each, within the code


def test_a_section_keeps_the_highlight_to_its_own_lines() -> None:
    marks = lesson(
        highlight={"local": [1, 2, 3, 4, 5]},
        sections={"first": "a = 1", "second": "b =", "lost": "not in the code"},
    )
    d = scenario("backward_only")
    assert marks.lines_for("local", d, "first") == [1, 2, 3]  # up to where "second" starts
    assert marks.lines_for("local", d, "second") == [4, 5, 6]  # to the end
    assert marks.lines_for("local", d, "lost") == [1, 2, 3, 4, 5, 6]
    assert marks.lines_for("local", d, "") == [1, 2, 3, 4, 5, 6]
    middle = lesson(
        highlight={"local": [1, 2, 3, 4, 5]}, sections={"b": "b =", "a": "a = 1", "c": "c ="}
    )
    assert middle.lines_for("local", d, "b") == [4]  # the nearest later start ends it


def test_dimmed_lines_follow_the_choice_too() -> None:
    assert lesson(dim=(2, 5)).dim_lines(scenario("backward_only")) == [2, 3, 6]
    assert lesson(dim=(2, 5)).dim_lines(scenario()) == [2, 5]
    assert lesson(choose={}, dim=(7, 2)).dim_lines(scenario()) == [7, 2]


def test_a_lesson_trains_and_plots_as_its_kind_says() -> None:
    assert lesson(kind="collective").run_kind() is registry.get("collective")
    assert not lesson(kind="collective").trains and not lesson(kind="collective").plots
    assert lesson(kind="watched").plots and not lesson(kind="watched").trains
    assert lesson(scene="ring").run_kind() is registry.get("collective")  # by its scene
    assert lesson(scene="ddp_step").trains and lesson(scene="ddp_step").plots
    assert lesson(scene="no such scene").run_kind() is None
    assert lesson(scene="no such scene").trains and lesson(scene="no such scene").plots


@pytest.mark.parametrize("lesson_id", load_course().ids)
def test_a_lesson_folder_is_read_field_by_field_from_its_toml(lesson_id) -> None:
    folder = asset("lessons", lesson_id)
    raw = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
    code = raw.get("code", {})
    got = load_lesson_folder(folder)
    assert got.id == lesson_id and got.title == raw["title"]
    assert got.markdown == (folder / "lesson.md").read_text(encoding="utf-8")
    assert got.code == code.get("listing", "").strip("\n")
    assert got.order == raw["order"] and got.summary == raw.get("summary", "")
    assert got.prerequisites == tuple(raw.get("prerequisites", ()))
    assert got.terms == tuple(raw.get("terms", ()))
    assert got.scene == raw.get("scene", "ddp_step") and got.kind == raw.get("kind", "")
    assert got.scenario_file == (folder / raw["scenario"] if "scenario" in raw else None)
    assert got.highlight == code.get("phases", {})
    assert got.dim == tuple(code.get("dim", ()))
    assert got.sections == code.get("sections", {})
    assert got.phase_text == raw.get("phase_text", {})
    assert got.choose == code.get("choose", {})
    assert got.source == tuple(code.get("source", ()))
    assert len(got.questions) == len(raw.get("question", []))


def broken(tmp_path, old: str = "", new: str = "", name: str = "broken"):
    folder = tmp_path / name
    shutil.copytree(asset("lessons", "ddp-pattern"), folder)
    toml = (folder / "lesson.toml").read_text()
    assert old in toml
    (folder / "lesson.toml").write_text(toml.replace(old, new, 1))
    return folder


def refused(folder) -> str:
    with pytest.raises(LessonError) as caught:
        load_lesson_folder(folder)
    return str(caught.value)


def test_each_broken_folder_is_named_in_so_many_words(tmp_path) -> None:
    gone = broken(tmp_path, name="no-text")
    (gone / "lesson.md").unlink()
    assert refused(gone) == "lesson no-text: missing lesson.md"
    bare = tmp_path / "bare"
    bare.mkdir()
    assert refused(bare) == "lesson bare: missing lesson.toml"
    bad = broken(tmp_path, "title = ", "title = = ", "bad-toml")
    assert refused(bad).startswith("lesson bad-toml: lesson.toml is not valid TOML (")
    title = broken(tmp_path, 'title = "Launching and the DDP pattern"', "title = 3", "t")
    assert refused(title) == "lesson t: `title` must be a str"
    kind = broken(tmp_path, 'kind = "ddp_step"', 'kind = "essay"', "k")
    known = ", ".join(k.id for k in registry.kinds())
    assert refused(kind) == f"lesson k: unknown kind 'essay'; known: {known}"
    terms = broken(tmp_path, "terms = [", 'terms = [" ", ', "w")
    assert refused(terms) == "lesson w: `terms` must be a list of words"
    choose = broken(tmp_path, "[code]\n", "[code]\nchoose = 3\n", "c")
    assert refused(choose) == "lesson c: [code.choose] holds one table of texts per scenario key"
    texts = broken(tmp_path, "[code]\n", "[code]\nchoose = {a = 1}\n", "c2")
    assert refused(texts) == "lesson c2: [code.choose] holds one table of texts per scenario key"
    scene = broken(tmp_path, 'scene = "ddp_step"', 'scene = "hologram"', "s")
    assert refused(scene).startswith("lesson s: unknown scene 'hologram'; known: ")
