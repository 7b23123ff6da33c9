"""A lesson folder read afresh (never the copy an earlier read left in memory): every course
lesson field by field against its own TOML, a folder that gives only a title read with each
key's default, listings kept as written, files read as UTF-8 whatever the machine's locale; and
the listing as shown: nested choices, chosen texts kept as written, whole-number floats, and
line numbers past either end of the listing or of its last section marking nothing."""

from __future__ import annotations

import io
import shutil
import tomllib

import pytest

import ddp_viz.model.lesson as lesson_module
from ddp_viz.model.assets import asset
from ddp_viz.model.course import load_course
from ddp_viz.model.lesson import Lesson, LessonError, load_lesson_folder
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.scenes import scenes


@pytest.fixture(autouse=True)
def _read_afresh(monkeypatch) -> None:
    """Every read parses the files: no lesson read by an earlier test is handed back."""
    monkeypatch.setattr(lesson_module, "_READ", {})


def copied(tmp_path, lesson_id: str):
    folder = tmp_path / lesson_id
    shutil.copytree(asset("lessons", lesson_id), folder)
    return folder


def written(tmp_path, toml: str, name: str = "tiny", markdown: str = "# Tiny\n"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "lesson.toml").write_text(toml, encoding="utf-8")
    (folder / "lesson.md").write_text(markdown, encoding="utf-8")
    return folder


def refused(folder) -> str:
    with pytest.raises(LessonError) as caught:
        load_lesson_folder(folder)
    return str(caught.value)


@pytest.mark.parametrize("lesson_id", load_course().ids)
def test_each_lesson_read_afresh_holds_its_tomls_listing_marks_and_parts(
    tmp_path, lesson_id
) -> None:
    folder = copied(tmp_path, lesson_id)
    raw = tomllib.loads((folder / "lesson.toml").read_bytes().decode("utf-8"))
    code = raw.get("code", {})
    got = load_lesson_folder(folder)
    assert got.title == raw["title"] and got.order == raw["order"]
    assert got.markdown == (folder / "lesson.md").read_bytes().decode("utf-8")
    assert got.code == code.get("listing", "").strip("\n")
    assert got.highlight == code.get("phases", {})
    assert got.dim == tuple(code.get("dim", ()))
    assert got.sections == code.get("sections", {})
    assert got.phase_text == raw.get("phase_text", {})
    assert got.choose == code.get("choose", {})
    assert got.kind == raw.get("kind", "")
    assert [q.id for q in got.questions] == [q["id"] for q in raw.get("question", [])]


def test_the_course_has_lessons_with_dimmed_lines_and_sections_to_read() -> None:
    """The test above reads something: some lessons dim lines, one names sections."""
    raws = [
        tomllib.loads((asset("lessons", i) / "lesson.toml").read_text(encoding="utf-8"))
        for i in load_course().ids
    ]
    assert any(r.get("code", {}).get("dim") for r in raws)
    assert any(r.get("code", {}).get("sections") for r in raws)


def test_a_lesson_read_on_a_machine_whose_locale_is_not_utf8_reads_as_written(
    tmp_path, monkeypatch
) -> None:
    """A Windows machine's locale (cp1252) must not turn the lesson's dashes into mojibake."""
    folder = copied(tmp_path, "ddp-pattern")
    toml_text = (folder / "lesson.toml").read_bytes().decode("utf-8")
    md_text = (folder / "lesson.md").read_bytes().decode("utf-8")
    assert not toml_text.isascii() and not md_text.isascii()  # something to misread
    real = io.text_encoding
    monkeypatch.setattr(
        io, "text_encoding", lambda enc, stacklevel=2: "cp1252" if enc is None else real(enc)
    )
    got = load_lesson_folder(folder)
    raw = tomllib.loads(toml_text)
    assert got.markdown == md_text
    assert got.summary == raw["summary"] and got.phase_text == raw["phase_text"]
    questions = raw["question"]
    assert [q.explain for q in got.questions] == [q.get("explain", "") for q in questions]
    assert any("\u2248 \u221233.17" in q.explain for q in got.questions)  # "about minus 33.17"


def test_a_folder_giving_only_a_title_is_read_with_each_keys_default(tmp_path) -> None:
    got = load_lesson_folder(written(tmp_path, 'title = "Tiny"\n'))
    assert got.title == "Tiny" and got.markdown == "# Tiny\n"
    assert got.code == ""  # no listing: nothing, not "None"
    assert got.order == 0
    assert got.kind == "" and got.scene == "ddp_step"
    assert got.scenario_file is None
    assert got.highlight == {} and got.dim == () and got.sections == {}
    assert got.phase_text == {} and got.questions == () and got.choose == {}
    assert got.source == () and got.terms == () and got.prerequisites == ()


def test_a_code_table_without_phases_or_listing_and_an_empty_scenario_name(tmp_path) -> None:
    folder = written(tmp_path, 'title = "Tiny"\nscenario = ""\n[code]\ndim = [1]\n')
    got = load_lesson_folder(folder)
    assert got.scenario_file is None  # "" names no file
    assert got.highlight == {} and got.dim == (1,) and got.code == ""


def test_a_listing_keeps_its_first_lines_indent_and_its_last_character(tmp_path) -> None:
    listing = "\n\n    for X, Y in loader:\n        last = X\n\n"
    toml = f'title = "Tiny"\n[code]\nlisting = """\n{listing}"""\n'
    got = load_lesson_folder(written(tmp_path, toml))
    assert got.code == "    for X, Y in loader:\n        last = X"  # only blank lines go


def test_a_line_number_written_as_a_float_still_marks_its_line(tmp_path) -> None:
    toml = (
        'title = "Tiny"\n[code]\nlisting = """\na = 1\nb = 2\nc = 3\n"""\n'
        '[code.phases]\nlocal = [2.0, "c = "]\n'
    )
    got = load_lesson_folder(written(tmp_path, toml))
    assert got.highlight == {"local": [2, "c = "]}
    assert got.lines_for("local") == [2, 3]


def test_an_unknown_scene_is_named_with_every_known_one(tmp_path) -> None:
    folder = written(tmp_path, 'title = "Tiny"\nscene = "hologram"\n', name="s")
    known = ", ".join(scenes())
    assert refused(folder) == f"lesson s: unknown scene 'hologram'; known: {known}"


# the listing as shown: a lesson built here, every line written out by hand


def scenario(no_sync: str = "none", scale_loss: bool = True, **changes) -> dict:
    d = Scenario().to_dict()
    d["train"] = {**d["train"], "no_sync": no_sync, "scale_loss": scale_loss}
    return d | changes


def lesson(code: str, choose: dict, **kw) -> Lesson:
    return Lesson(id="mine", title="Mine", markdown="", code=code, choose=choose, **kw)


def test_a_chosen_text_that_chooses_again_follows_the_runs_value() -> None:
    nested = lesson(
        "x = 1\n${choose:train.no_sync}",
        {
            "train.no_sync": {"none": "loss = ${choose:train.scale_loss}"},
            "train.scale_loss": {"true": "loss / world", "false": "loss"},
        },
    )
    assert nested.listing_for(scenario(scale_loss=True)) == "x = 1\nloss = loss / world"
    assert nested.listing_for(scenario(scale_loss=False)) == "x = 1\nloss = loss"


def test_a_choice_inside_a_chosen_text_without_a_table_says_so() -> None:
    inner = lesson(
        "${choose:train.no_sync}",
        {"train.no_sync": {"none": "y = ${choose:train.loss_reduction}"}},
    )
    assert inner.listing_for(scenario()) == "y = # (no listing for train.loss_reduction = mean)"


def test_a_chosen_text_keeps_its_own_indent_and_its_first_and_last_characters() -> None:
    indented = lesson(
        "if sync:\n${choose:train.no_sync}\ndone()",
        {"train.no_sync": {"none": "\n    loss.backward()\n"}},
    )
    assert indented.listing_for(scenario()).splitlines() == [
        "if sync:",
        "    loss.backward()",
        "done()",
    ]
    xs = lesson(
        "${choose:train.no_sync}",
        {"train.no_sync": {"none": "X, Y = X.to(rank), Y.to(rank)\nlast = X"}},
    )
    assert xs.listing_for(scenario()) == "X, Y = X.to(rank), Y.to(rank)\nlast = X"


def test_a_whole_number_float_shows_as_written_in_a_lesson() -> None:
    plain = lesson("DDP(model, bucket_cap_mb=${ddp.bucket_cap_mb})  # lr ${lr}", {})
    d = scenario(lr=1.0)
    d["ddp"] = {**d["ddp"], "bucket_cap_mb": 25.0}
    assert plain.code_with(d) == "DDP(model, bucket_cap_mb=25)  # lr 1"
    d["ddp"]["bucket_cap_mb"] = 2500000.0
    assert plain.code_with(d) == "DDP(model, bucket_cap_mb=2.5e+06)  # lr 1"


CODE = "a = 1\n${choose:train.no_sync}\nb = 2"  # the choice: one line, or two
CHOOSE = {
    "train.no_sync": {
        "none": "loss.backward()",
        "backward_only": "with model.no_sync():\n    loss.backward()",
    }
}


def test_line_zero_is_no_line_even_where_a_choice_maps_the_lines() -> None:
    marks = lesson(CODE, CHOOSE, highlight={"local": [0, 1]}, dim=(0, 2))
    assert marks.lines_for("local", scenario("backward_only")) == [1]
    assert marks.dim_lines(scenario("backward_only")) == [2, 3]
    assert marks.lines_for("local", scenario()) == [1]
    assert marks.dim_lines(scenario()) == [2]


def test_a_line_past_the_listings_end_marks_nothing() -> None:
    plain = lesson("a = 1\nb = 2\nc = 3", {}, highlight={"local": [4], "step": [3, 4]})
    assert plain.lines_for("local", scenario()) == []
    assert plain.lines_for("step", scenario()) == [3]
    parts = lesson(
        "a = 1\nb = 2\nc = 3",
        {},
        highlight={"local": [1, 2, 3, 4]},
        sections={"top": "a = 1", "rest": "b = 2"},
    )
    assert parts.lines_for("local", scenario(), "rest") == [2, 3]  # the last part ends at 3
    assert parts.lines_for("local", scenario(), "top") == [1]
    assert parts.lines_for("local", scenario()) == [1, 2, 3]
