"""`make mutants`: mutation testing of the modules whose output a user reads, with a ratchet.

mutmut (3.8) rewrites every function of the listed modules into a copy under ``mutants/`` with
its mutants beside it, runs the tests in-process against that copy, and records which tests
kill which mutant. This script scopes a run, reads mutmut's results, leaves out the mutants
``tests/mutation/excluded.toml`` explains, prints each module's survivors as diffs (so a
developer sees their own surviving bugs), one score per module, and the line
``score: N% (K of M killed)``.

The committed figures are ``tests/mutation/scores.json``: per module its score and a
fingerprint of the module and of the test files that covered it. ``--check`` (CI) reruns the
modules whose fingerprint changed and fails when a score falls below its figure; ``--update``
records the figures of the modules it ran (never lowering one unless ``--allow-lower``).

Which modules are listed, and which tests run, is ``[tool.mutmut]`` in pyproject.toml: one list.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import hashlib
import json
import os
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from mutmut_run import LOG, dotted, run_mutmut  # tools/, beside this script

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "mutation"
SCORES = HERE / "scores.json"
EXCLUDED = HERE / "excluded.toml"

# mutmut's exit codes (mutmut/stats.py): a kill is a test that failed, errored or timed out
KILLED = {1, 3, 24, 36, 152, 255, -24, -11, -9, 37}
# of those, mutmut's CPU limit (SIGXCPU, its own timeout): the tests ran long, which a slower
# or busier machine's run may not repeat; a mutant killed only so has no test that fails it
TIMED_OUT = {24, 36, 152, 255, -24}
SURVIVED = {0}
NO_TESTS = {5, 33}


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's, e.g. ddp_viz.model.quiz.x_grade__mutmut_3
    module: str  # src/ddp_viz/model/quiz.py
    function: str  # grade, or Class.method
    status: str  # killed, timed out (counted killed), survived, no tests, not checked
    was: tuple[str, ...]  # the lines the mutation changed, before and after
    now: tuple[str, ...]


@dataclass
class Score:
    module: str
    killed: int = 0
    total: int = 0
    excluded: int = 0
    survivors: list[Mutant] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)  # names: killed only by the CPU limit

    @property
    def percent(self) -> float:
        return 100.0 if self.total == 0 else 100.0 * self.killed / self.total


def mutmut_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]


def listed_modules() -> list[str]:
    """Every module pyproject's ``[tool.mutmut]`` lists (``only_mutate`` less
    ``do_not_mutate``, with mutmut's own fnmatch rule), as paths from the repo's root."""
    cfg = mutmut_config()
    out = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if any(fnmatch.fnmatch(rel, p) for p in cfg["only_mutate"]) and not any(
            fnmatch.fnmatch(rel, p) for p in cfg.get("do_not_mutate", [])
        ):
            out.append(rel)
    return out


def function_name(mangled: str) -> str:
    """``x_grade`` -> ``grade``; ``xǁQuizǁgrade`` -> ``Quiz.grade``."""
    if mangled.startswith("xǁ"):
        return ".".join(mangled[2:].split("ǁ"))
    return mangled.removeprefix("x_")


def _function_sources(text: str) -> dict[str, str]:
    """Each mutant's source, as ``ast.get_source_segment`` gives it. That splits the whole
    file into lines on every call: a scene's mutated copy holds about a thousand functions,
    and scoring it took a minute; the lines are split once here."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            out[node.name] = _segment(lines, node)
    return out


def _segment(lines: list[str], node: ast.stmt) -> str:
    """``ast.get_source_segment(text, node)`` from the text's lines (offsets are in UTF-8
    bytes within their line)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset or 0
    if first == last:
        return lines[first].encode()[start:end].decode()
    head = lines[first].encode()[start:].decode()
    tail = lines[last].encode()[:end].decode()
    return head + "".join(lines[first + 1 : last]) + tail


def _changed_lines(orig: str, mutant: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    a = [line.strip() for line in orig.splitlines()[1:]]  # the def line names the mutant
    b = [line.strip() for line in mutant.splitlines()[1:]]
    was: list[str] = []
    now: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            was += a[i1:i2]
            now += b[j1:j2]
    return tuple(was), tuple(now)


class CutShort(Exception):
    """A module's results file that does not parse: mutmut rewrites it after each mutant, so a
    run stopped at its budget can leave it half written."""


def read_mutants(module: str) -> list[Mutant]:
    mutated = ROOT / "mutants" / module
    meta = Path(f"{mutated}.meta")
    if not meta.exists():
        return []
    try:
        codes = json.loads(meta.read_text("utf-8"))["exit_code_by_key"]
    except (json.JSONDecodeError, KeyError) as e:
        raise CutShort(f"{meta.relative_to(ROOT)}: {e}") from e
    sources = _function_sources(mutated.read_text("utf-8"))
    out = []
    for name, code in sorted(codes.items()):
        mangled, _, _ = name.rsplit(".", 1)[1].partition("__mutmut_")
        orig = sources.get(f"{mangled}__mutmut_orig", "")
        was, now = _changed_lines(orig, sources.get(name.rsplit(".", 1)[1], ""))
        if code in TIMED_OUT:
            status = "timed out"
        elif code in KILLED:
            status = "killed"
        elif code in SURVIVED:
            status = "survived"
        elif code in NO_TESTS:
            status = "no tests"
        else:
            status = "not checked" if code is None else f"exit {code}"
        out.append(Mutant(name, module, function_name(mangled), status, was, now))
    return out


def load_exclusions() -> list[dict]:
    if not EXCLUDED.exists():
        return []
    return tomllib.loads(EXCLUDED.read_text("utf-8")).get("mutant", [])


def is_excluded(m: Mutant, rules: list[dict]) -> bool:
    """A rule names the module and function and the changed line, before and after (stripped):
    stable across runs, where mutmut's numbers are not."""
    for r in rules:
        if (
            r["module"] == m.module
            and r["function"] == m.function
            and tuple(r.get("was", [])) == m.was
            and tuple(r.get("now", [])) == m.now
        ):
            return True
    return False


def score(module: str, rules: list[dict]) -> Score:
    s = Score(module)
    for m in read_mutants(module):
        if is_excluded(m, rules):
            s.excluded += 1
            continue
        s.total += 1
        if m.status in ("killed", "timed out"):
            s.killed += 1
            if m.status == "timed out":
                s.timed_out.append(m.name)
        else:
            s.survivors.append(m)
    return s


def covering_tests(module: str) -> list[str]:
    stats = ROOT / "mutants" / "mutmut-stats.json"
    if not stats.exists():
        return []
    by_function = json.loads(stats.read_text("utf-8"))["tests_by_mangled_function_name"]
    prefix = dotted(module) + "."
    files = {
        t.split("::", 1)[0]
        for key, tests in by_function.items()
        if key.startswith(prefix) and "." not in key[len(prefix) :]
        for t in tests
    }
    return sorted(files)


# The files as a run found them: a figure is recorded against what mutmut copied when the
# run began, not against edits made while it ran (which are then rerun next time).
_AS_RUN: dict[str, bytes] = {}


def _snapshot(modules: list[str]) -> None:
    for path in [*(ROOT / m for m in modules), *(ROOT / "tests").rglob("*.py")]:
        if path.is_file():
            _AS_RUN[path.relative_to(ROOT).as_posix()] = path.read_bytes()


def fingerprint(module: str, tests: list[str]) -> str:
    """The module, the test files that covered it and its own exclusions: what its figure
    depends on (another module's exclusion leaves it current)."""
    h = hashlib.sha256()
    for rel in [module, *tests]:
        path = ROOT / rel
        h.update(rel.encode())
        data = _AS_RUN.get(rel) or (path.read_bytes() if path.exists() else b"(gone)")
        h.update(data)
    rules = [r for r in load_exclusions() if r.get("module") == module]
    h.update(json.dumps(rules, sort_keys=True).encode())
    return h.hexdigest()[:16]


def load_scores() -> dict[str, dict]:
    return json.loads(SCORES.read_text("utf-8")) if SCORES.exists() else {}


def stale(module: str, recorded: dict[str, dict]) -> bool:
    entry = recorded.get(module)
    return entry is None or fingerprint(module, entry.get("tests", [])) != entry["fingerprint"]


def show(s: Score, recorded: dict | None, verbose: bool) -> None:
    was = f" (recorded {recorded['score']:.1f}%)" if recorded else " (not recorded yet)"
    print(f"{s.percent:6.1f}%  {s.killed:4d}/{s.total:<4d} {s.module}{was}", end="")
    print(f"  [{s.excluded} excluded]" if s.excluded else "")
    if verbose:
        for m in s.survivors:
            print(f"        {m.status}: {m.function}  ({m.name})")
            for line in m.was:
                print(f"          - {line}")
            for line in m.now:
                print(f"          + {line}")


def in_paths(module: str, paths: list[str]) -> bool:
    return any(module == p.rstrip("/") or module.startswith(p.rstrip("/") + "/") for p in paths)


def choose(paths: list[str], recorded: dict[str, dict]) -> list[str]:
    """The modules to run: those under ``paths``; without paths, every recorded module whose
    fingerprint changed (what a change touched: the module, a test that covered it, or an
    exclusion)."""
    listed = listed_modules()
    if paths:
        rel = [Path(p).resolve().relative_to(ROOT).as_posix() for p in paths]
        chosen = [m for m in listed if in_paths(m, rel)]
        if not chosen:
            sys.exit(f"no listed module under {' '.join(paths)} ([tool.mutmut] only_mutate)")
        return chosen
    return [m for m in listed if m in recorded and stale(m, recorded)]


def table(recorded: dict[str, dict], fresh: dict[str, Score]) -> None:
    """Every listed module's figure: this run's, the committed one, or none yet."""
    print("\nmodule scores (tests/mutation/scores.json; * = measured by this run):")
    for module in listed_modules():
        if module in fresh:
            s = fresh[module]
            print(f"  {s.percent:5.1f}%* {s.killed:4d}/{s.total:<4d} {module}")
        elif module in recorded:
            e = recorded[module]
            print(f"  {e['score']:5.1f}%  {e['killed']:4d}/{e['total']:<4d} {module}")
        else:
            print(f"      -            {module} (not measured yet)")


def record_scores(scores: list[Score], recorded: dict[str, dict]) -> None:
    # onto the file as it is now, not as this run found it: another run that recorded other
    # modules while this one ran (in the same checkout) keeps its figures
    recorded.clear()
    recorded.update(load_scores())
    for s in scores:
        tests = covering_tests(s.module)
        recorded[s.module] = {
            "score": round(s.percent, 1),
            "killed": s.killed,
            "total": s.total,
            "tests": tests,
            "fingerprint": fingerprint(s.module, tests),
        }
        if s.timed_out:
            recorded[s.module]["timed_out"] = sorted(s.timed_out)
    SCORES.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n", "utf-8")
    print(f"recorded in {SCORES.relative_to(ROOT)}")


def fell(s: Score, entry: dict) -> bool:
    """Whether ``s`` is below the recorded share (not its rounded figure: 26 of 30 is 86.67%,
    recorded as 86.7, and must not read as a fall when measured again). A mutant the record
    counted killed only because its tests ran out of CPU time, and that passed this time, is
    no fall: it never had a test that fails it, and a faster run need not time out."""
    back = {m.name for m in s.survivors} & set(entry.get("timed_out", []))
    if back:
        print(
            f"  {s.module}: {len(back)} mutant(s) recorded as killed only by the CPU limit "
            "passed this time (not a fall; they need a test that fails them):"
        )
        for name in sorted(back):
            print(f"    {name}")
    return (s.killed + len(back)) * entry["total"] < entry["killed"] * s.total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", help="files or folders under src/ (default: what changed)")
    p.add_argument("--update", action="store_true", help="record the scores of what ran")
    p.add_argument("--allow-lower", action="store_true", help="with --update: may lower one")
    p.add_argument("--quiet", action="store_true", help="no survivors, scores only")
    p.add_argument("--budget", type=float, help="seconds mutmut may take (CI); then stop")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = p.parse_args(argv)

    recorded = load_scores()
    modules = choose(args.paths, recorded)
    fresh: dict[str, Score] = {}
    failed: list[str] = []
    if modules:
        print(f"mutants: {len(modules)} module(s); mutmut's progress: {LOG.relative_to(ROOT)}")
        _snapshot(modules)
        in_time = run_mutmut(modules, args.jobs, args.budget)
        rules = load_exclusions()
        for module in modules:
            try:
                s = score(module, rules)
            except CutShort as e:
                if in_time:  # mutmut finished: its file should be whole
                    sys.exit(f"mutmut's results do not parse: {e}")
                print(f"  not rechecked in the budget: {module} (its results were cut short)")
                continue
            unchecked = sum(m.status == "not checked" for m in s.survivors)
            if not in_time and unchecked:
                print(f"  not rechecked in the budget: {module} ({unchecked} mutants left)")
                continue
            fresh[module] = s
            show(s, recorded.get(module), verbose=not args.quiet)
            entry = recorded.get(module)
            if entry is not None and fell(s, entry):
                failed.append(f"{module}: {s.percent:.1f}% < recorded {entry['score']:.1f}%")
    else:
        print("mutants: every recorded module's figure is current; nothing to run")
    table(recorded, fresh)
    # the last line: a run's own mutants when it ran some, else every recorded module's
    figures = {m: (e["killed"], e["total"]) for m, e in recorded.items()}
    if fresh:
        figures = {m: (s.killed, s.total) for m, s in fresh.items()}
    killed = sum(k for k, _ in figures.values())
    total = sum(t for _, t in figures.values())
    print(f"score: {100.0 * killed / max(total, 1):.0f}% ({killed} of {total} killed)")
    if args.update and fresh and (not failed or args.allow_lower):
        record_scores(list(fresh.values()), recorded)
    for line in failed:
        print(f"FELL: {line}", file=sys.stderr)
    return 1 if failed and not (args.update and args.allow_lower) else 0


if __name__ == "__main__":
    sys.exit(main())
