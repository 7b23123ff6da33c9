"""Lessons: each is a folder under assets/lessons/ holding ``lesson.md``, ``lesson.toml`` and the
scenario it runs. Pure model layer; a lecturer adds a lesson by adding a folder.

``lesson.toml`` holds the title, the lesson's place in the course (``order``), a one-line
``summary``, ``prerequisites`` (lesson ids), ``terms`` (the terms the lesson introduces: no
earlier lesson's quiz or listing may use them), the default ``scenario`` file, the stage ``scene``,
the code listing with the lines to highlight per phase (``[code]``; ``${ddp.bucket_cap_mb}`` in
the listing shows the value of the run on screen; ``${choose:train.no_sync}`` puts in the text
that ``[code.choose."train.no_sync"]`` gives for the run's value), one sentence per phase
(``[phase_text]``) and the quiz (``[[question]]``).
"""

from __future__ import annotations

import functools
import html
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddp_viz.model import registry
from ddp_viz.model.dataspec import with_run_epochs
from ddp_viz.model.quiz import Question, parse_questions
from ddp_viz.model.scenario import Scenario

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


class LessonError(ValueError):
    """A lesson folder that cannot be used; the message names the folder and the key."""


PLACEHOLDER = re.compile(r"\$\{([a-z_]+(?:\.[a-z_]+)*)\}")
CHOOSE = re.compile(r"\$\{choose:([a-z_]+(?:\.[a-z_]+)*)\}")


def _lookup(scenario: Mapping[str, Any], path: str) -> Any:
    found: Any = scenario
    for part in path.split("."):
        found = found.get(part) if isinstance(found, Mapping) else None
    return found


def _word(value: Any) -> str:
    """A scenario value as a ``[code.choose]`` key: TOML's true/false for flags."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    markdown: str
    code: str
    order: int = 0
    summary: str = ""
    prerequisites: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # the terms this lesson introduces to the course
    scene: str = ""  # the stage scene ("": DDP training's, registry.default_scene)
    # the kind of run the lesson shows (a folder under ddp_viz/kinds/); "" for DDP training
    kind: str = ""
    scenario_file: Path | None = None
    # per phase: listing line numbers as written, or texts (every shown line holding one)
    highlight: dict[str, list[int | str]] = field(default_factory=dict)
    dim: tuple[int, ...] = ()  # listing lines that are ddp-viz's instrumentation, not the lesson
    # parts of the listing a stage frame can say it shows: name -> the text on the part's
    # first line (the part runs to the next part's first line)
    sections: dict[str, str] = field(default_factory=dict)
    phase_text: dict[str, str] = field(default_factory=dict)
    questions: tuple[Question, ...] = ()
    # ``${choose:key}`` in the listing: scenario key -> the key's value -> text to put in
    choose: dict[str, dict[str, str]] = field(default_factory=dict)
    # the ``# listing: <name>`` regions of the kind's engine the listing follows, in order
    # (ddp_viz.model.listings checks it)
    source: tuple[str, ...] = ()

    @property
    def trains(self) -> bool:
        """Does the lesson's run train a model of ddp-viz's (with a loss, a reference and a
        form to change it)? The all-reduce lesson's moves vectors only; a watched run trains
        the user's own script."""
        kind = self.run_kind()
        return kind.trains if kind is not None else True

    @property
    def plots(self) -> bool:
        """Does the window show plots beside it? A training run's loss and parameters, a
        watched run's arrivals at the all-reduce and parameters; nothing for the all-reduce
        lesson's vectors."""
        kind = self.run_kind()
        return kind.plots if kind is not None else True

    def run_kind(self) -> registry.RunKind | None:
        """The kind the lesson names, or (naming none) the kind whose scene it shows."""
        return registry.get(self.kind) if self.kind else registry.kind_showing(self.scene)

    def lines_for(
        self, phase: str, scenario: Mapping[str, Any] | None = None, section: str = ""
    ) -> list[int]:
        """1-based code lines to highlight while ``phase`` plays, in the listing as shown for
        ``scenario``: a ``${choose:…}`` line highlights every line its text fills, and a text
        (``"loss.backward()"``) every line that holds it, whichever text was chosen; within
        ``section`` (a key of :attr:`sections`) when the stage names one."""
        marks = self.highlight.get(phase, [])
        lines = self._mapped([m for m in marks if isinstance(m, int)], scenario)
        texts = [m for m in marks if isinstance(m, str)]
        shown = self.code_with(scenario).splitlines()
        if texts:
            lines += [i for i, line in enumerate(shown, 1) if any(t in line for t in texts)]
        span = self._section_span(shown, section)
        return sorted({n for n in lines if span[0] <= n < span[1]})

    def _section_span(self, shown: list[str], section: str) -> tuple[int, int]:
        """[first, end) lines of ``section`` in the listing ``shown``; all of it for none."""
        starts = {
            name: next((i for i, line in enumerate(shown, 1) if text in line), 0)
            for name, text in self.sections.items()
        }
        first = starts.get(section, 0)
        if not first:
            return 1, len(shown) + 1
        later = [n for n in starts.values() if n > first]
        return first, min(later, default=len(shown) + 1)

    def dim_lines(self, scenario: Mapping[str, Any] | None = None) -> list[int]:
        return self._mapped(list(self.dim), scenario)

    def _mapped(self, lines: list[int], scenario: Mapping[str, Any] | None) -> list[int]:
        if not self.choose:
            return list(lines)
        where = self._expand(self._values(scenario))[1]
        return [n for line in lines if 0 < line <= len(where) for n in where[line - 1]]

    def _values(self, scenario: Mapping[str, Any] | None) -> Mapping[str, Any]:
        return with_run_epochs(self.scenario().to_dict() if scenario is None else scenario)

    def _expand(self, scenario: Mapping[str, Any]) -> tuple[list[str], list[list[int]]]:
        """The listing's lines with every ``${choose:…}`` filled in (texts may hold more), and
        for each line as written the 1-based lines it became."""
        out: list[str] = []
        where: list[list[int]] = []
        for line in self.code.splitlines():
            filled = self._fill(line, scenario, depth=0)
            where.append(list(range(len(out) + 1, len(out) + 1 + len(filled))))
            out += filled
        return out, where

    def _fill(self, line: str, scenario: Mapping[str, Any], depth: int) -> list[str]:
        match = CHOOSE.search(line)
        if match is None or depth > 4:
            return [line]
        key = match.group(1)
        word = _word(_lookup(scenario, key))
        text = self.choose.get(key, {}).get(word, f"# (no listing for {key} = {word})")
        parts = text.strip("\n").splitlines() or [""]
        indent = line[: len(line) - len(line.lstrip())]
        filled = [line[: match.start()] + parts[0]] + [indent + p for p in parts[1:]]
        filled[-1] += line[match.end() :]
        return [done for part in filled for done in self._fill(part, scenario, depth + 1)]

    def listing_for(self, scenario: Mapping[str, Any] | None) -> str:
        """The listing with its ``${choose:…}`` texts for ``scenario`` put in and its
        ``${key}`` values left as written (what :mod:`ddp_viz.model.listings` checks)."""
        return "\n".join(self._expand(self._values(scenario))[0]) if self.choose else self.code

    def code_with(self, scenario: Mapping[str, Any] | None) -> str:
        """The listing with ``${key}`` / ``${table.key}`` filled from a scenario (its
        ``to_dict()`` form), so the code shows the values the run on screen used."""
        values = self._values(scenario)

        def value(match: re.Match[str]) -> str:
            found = _lookup(values, match.group(1))
            return f"{found:g}" if isinstance(found, float) else str(found)

        code = "\n".join(self._expand(values)[0]) if self.choose else self.code
        return PLACEHOLDER.sub(value, code)

    def scenario(self) -> Scenario:
        """The lesson's default scenario (a fresh, validated copy)."""
        if self.scenario_file is None:
            return Scenario()
        return Scenario.load(self.scenario_file)


def _need(meta: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = meta.get(key)
    if not isinstance(value, kind):
        raise LessonError(f"{where}: `{key}` must be a {kind.__name__}")
    return value


# folder -> (its files' names, sizes and times; the lesson read from them). Every window
# reads the whole course when it opens, and each lesson again when it is shown: parsing the
# same TOML and Markdown over and over was a tenth of a window's start. A lecturer's edit
# changes a file's time or size, and the next read sees it.
_READ: dict[Path, tuple[tuple[tuple[str, int, int], ...], Lesson]] = {}


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    try:
        files = [(p.name, p.stat()) for p in folder.iterdir() if p.is_file()]
    except OSError:
        return ()
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in files))


def load_lesson_folder(folder: Path) -> Lesson:
    """Read one lesson folder; :class:`LessonError` names what is wrong. Read again only
    when one of its files changed."""
    stamp = _stamp(folder)
    known = _READ.get(folder)
    if known is not None and stamp and known[0] == stamp:
        return known[1]
    lesson = _read_lesson_folder(folder)
    _READ[folder] = (stamp, lesson)
    return lesson


def _read_lesson_folder(folder: Path) -> Lesson:
    from ddp_viz.model.scenes import phases_of, scenes

    where = f"lesson {folder.name}"
    try:
        meta = tomllib.loads((folder / "lesson.toml").read_text(encoding="utf-8"))
        markdown = (folder / "lesson.md").read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise LessonError(f"{where}: missing {Path(exc.filename).name}") from None
    except tomllib.TOMLDecodeError as exc:
        raise LessonError(f"{where}: lesson.toml is not valid TOML ({exc})") from None
    scene = meta.get("scene") or registry.default_scene()
    known = scenes()
    if scene not in known:
        raise LessonError(f"{where}: unknown scene {scene!r}; known: {', '.join(known)}")
    kind = str(meta.get("kind", ""))
    if kind and registry.get(kind) is None:
        known = ", ".join(k.id for k in registry.kinds())
        raise LessonError(f"{where}: unknown kind {kind!r}; known: {known}")
    code = meta.get("code", {})
    highlight = {
        k: [n if isinstance(n, str) else int(n) for n in v]
        for k, v in code.get("phases", {}).items()
    }
    unknown = set(highlight) - set(phases_of(scene))
    if unknown:
        raise LessonError(
            f"{where}: [code.phases] names unknown phases {sorted(unknown)}; "
            f"the {scene} scene's phases: {', '.join(phases_of(scene))}"
        )
    scenario_file = folder / meta["scenario"] if meta.get("scenario") else None
    if scenario_file is not None and not scenario_file.is_file():
        raise LessonError(f"{where}: scenario file {meta['scenario']} not found")
    try:
        questions = parse_questions(meta.get("question", []))
    except ValueError as exc:
        raise LessonError(f"{where}: {exc}") from None
    return Lesson(
        id=folder.name,
        title=_need(meta, "title", str, where),
        markdown=markdown,
        code=str(code.get("listing", "")).strip("\n"),
        order=int(meta.get("order", 0)),
        summary=str(meta.get("summary", "")),
        prerequisites=tuple(meta.get("prerequisites", ())),
        terms=_terms(meta.get("terms", []), where),
        scene=scene,
        kind=kind,
        scenario_file=scenario_file,
        highlight=highlight,
        dim=tuple(int(n) for n in code.get("dim", ())),
        sections={str(k): str(v) for k, v in code.get("sections", {}).items()},
        phase_text=dict(meta.get("phase_text", {})),
        questions=tuple(questions),
        choose=_choose(code.get("choose", {}), code.get("listing", ""), where),
        source=tuple(str(name) for name in code.get("source", ())),
    )


def _terms(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(t, str) and t.strip() for t in raw):
        raise LessonError(f"{where}: `terms` must be a list of words")
    return tuple(raw)


def _choose(table: Any, listing: str, where: str) -> dict[str, dict[str, str]]:
    """``[code.choose."table.key"]`` tables; every ``${choose:…}`` in the listing needs one."""
    if not isinstance(table, Mapping) or not all(isinstance(v, Mapping) for v in table.values()):
        raise LessonError(f"{where}: [code.choose] holds one table of texts per scenario key")
    missing = sorted(set(CHOOSE.findall(str(listing))) - set(table))
    if missing:
        raise LessonError(
            f"{where}: the listing uses ${{choose:{missing[0]}}} but there is no "
            f'[code.choose."{missing[0]}"]'
        )
    return {key: {str(k): str(v) for k, v in texts.items()} for key, texts in table.items()}


@functools.lru_cache(maxsize=256)  # pure; the same listings are drawn again on every switch
def highlight_python(code: str, style: str = "default", pre_style: str = "margin:0") -> str:
    """Syntax-highlighted HTML with inline styles (Qt's rich text has no stylesheet classes)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    formatter = HtmlFormatter(noclasses=True, nowrap=True, style=style)
    body = highlight(code, PythonLexer(), formatter)
    return f"<pre style='{pre_style}'>{body}</pre>"


@functools.lru_cache(maxsize=64)
def markdown_to_html(text: str, code_style: str = "default", code_bg: str = "#f3f3f0") -> str:
    """Render lesson Markdown, with Python code blocks syntax-highlighted."""
    from markdown_it import MarkdownIt

    # Qt rich text honours inline styles and table attributes more reliably than CSS.
    pre_style = f"background:{code_bg}; padding:8px; white-space:pre-wrap"

    def fence(code: str, lang: str, _attrs: str) -> str:
        if lang in ("python", "py"):
            return highlight_python(code, code_style, pre_style)
        return f"<pre style='{pre_style}'>{html.escape(code)}</pre>"

    md = MarkdownIt("commonmark", {"highlight": fence}).enable("table")
    body = md.render(text).replace("<pre>", f"<pre style='{pre_style}'>")  # indented code
    # width 100%: a wide table wraps its cells instead of scrolling the lesson sideways
    body = body.replace(
        "<table>", "<table cellpadding='4' cellspacing='0' border='1' width='100%'>"
    )
    return body


@functools.lru_cache(maxsize=4096)
def inline_markdown(text: str) -> str:
    """One paragraph of Markdown (quiz prompts, feedback) as rich text without the <p>."""
    return _inline_parser().renderInline(text)


@functools.lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    """One parser for every inline text: building one costs more than most texts' rendering."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")
