"""Running mutmut for tools/mutants.py: on the chosen modules only, with its map of covering
tests collected again whenever it could be stale, within a budget of seconds (CI's).

mutmut (3.8) keeps state under ``mutants/`` between runs: the mutated copies, each module's
results (``.meta``) and the map of which tests cover which function. Each rule below is a way
that state went wrong once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "mutants" / "run.log"


def dotted(module: str) -> str:
    """The module's dotted name as mutmut names its mutants: a package's ``__init__.py`` is
    the package (``ddp_viz.model.rules``, not ``ddp_viz.model.rules.__init__``)."""
    return (
        module.removeprefix("src/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    )


# mutmut reads which files to mutate from pyproject.toml; a scoped run narrows that list in
# the child's own config so that only the chosen modules are rewritten (all 88 take minutes).
_CHILD = """
import sys
from mutmut import configuration
from mutmut.__main__ import cli
configuration.config().only_mutate = sys.argv[1].split(",")
cli(["run", "--max-children", sys.argv[2], *sys.argv[3:]])
"""


def tests_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "tests").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(path.relative_to(ROOT).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def mapped(modules: list[str]) -> bool:
    """Whether mutmut's map of covering tests holds every one of ``modules``: it only maps
    the functions of modules that were mutated when it was collected, and drops a module's
    entries once a run scoped elsewhere copies that module back unmutated."""
    stats = ROOT / "mutants" / "mutmut-stats.json"
    try:
        names = json.loads(stats.read_text("utf-8"))["tests_by_mangled_function_name"]
    except (OSError, json.JSONDecodeError, KeyError):
        return False
    return all(any(n.startswith(f"{dotted(m)}.") for n in names) for m in modules)


def forget_stale_coverage(modules: list[str]) -> str:
    """mutmut collects which tests cover which function once, and after that only for tests
    it has not seen: a test that now calls more of the code would not be run against its
    mutants. So when anything under tests/ changed since, or the map lacks one of this run's
    modules (every mutant of it would read "no tests"), its map is collected again."""
    digest, seen = tests_digest(), ROOT / "mutants" / "tests.sha256"
    if not seen.exists() or seen.read_text() != digest or not mapped(modules):
        (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
        # mutmut copies tests/ over its old copy: a test deleted here would live on there
        shutil.rmtree(ROOT / "mutants" / "tests", ignore_errors=True)
    return digest


def regenerate(modules: list[str]) -> None:
    """mutmut rewrites a file only when its copy under mutants/ is older than the source; a
    run scoped to other modules copies this one there unmutated (it is not in the narrowed
    list), and the next run scoped to it would find that plain copy "unmodified": no mutants,
    and "no test covers any of them". So the chosen modules' copies go; their results stay
    in the .meta files, which mutmut merges by each function's hash."""
    for module in modules:
        (ROOT / "mutants" / module).unlink(missing_ok=True)


def run_mutmut(modules: list[str], jobs: int, budget: float | None) -> bool:
    """Run mutmut on ``modules``' mutants only (its progress goes to mutants/run.log); False
    when ``budget`` seconds ran out first (the mutants it did not reach stay unchecked)."""
    patterns = [f"{dotted(m)}.*" for m in modules]
    LOG.parent.mkdir(exist_ok=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    argv = [sys.executable, "-c", _CHILD, ",".join(modules), str(jobs), *patterns]
    digest = forget_stale_coverage(modules)
    regenerate(modules)
    with LOG.open("w") as log:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = proc.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return False
    if code != 0:
        tail = LOG.read_text("utf-8", errors="replace")[-3000:]
        sys.exit(f"mutmut failed (exit {code}); the end of {LOG}:\n{tail}")
    (ROOT / "mutants" / "tests.sha256").write_text(digest)
    return True
