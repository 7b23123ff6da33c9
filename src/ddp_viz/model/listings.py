"""The code on screen is the code that ran: a lesson's listing checked against its engine.

A kind's engine marks the code a lesson may show with comment lines::

    # listing: eval-shares
    model.eval()
    with torch.no_grad():
        ...
    # end listing

and the lesson names the regions its listing follows, in order (``[code] source = […]``). Every
statement of the listing must then be a statement of those regions, in the same order. Pure
(reads the engine's files as text; imports neither torch nor a kind), so the check runs in the
tests and anywhere a lecturer edits a lesson.

What counts as the same statement (the rule a lecturer writes to):

- statements are compared whole (Python's logical lines), so the listing may break a long call
  over lines where the engine does not;
- whitespace and comments do not count, and a comment-only line in the listing is narration;
- ``self.``, a plain assignment's type annotation and a trailing comma do not count: the engine's
  ``self.optimizer.step()`` is the listing's ``optimizer.step()``, its ``model: nn.Module = …``
  the listing's ``model = …``;
- ``${table.key}`` (a scenario value the window fills in, quoted or not) stands for one name or
  attribute (``spec.lr``), never for more arguments;
- ``...`` stands for whatever the listing leaves out of a statement (``DDP(model, ...)``);
- a listing may leave engine statements out (the capture, timing, events the window draws), but
  then it must say so in a ``# left out: …`` comment, which the window shows with the code.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1]  # src/ddp_viz
START = re.compile(r"^\s*# listing: ([\w.-]+)\s*$")
END = re.compile(r"^\s*# end listing\s*$")
LEFT_OUT = "# left out:"
ANY = "__listing_any__"  # what a ``${…}`` placeholder becomes before the listing is tokenized
PLACEHOLDER = re.compile(r"([\"']?)\$\{[^}]*\}\1")
VALUE = r"[\w.\[\]]+?"  # what a placeholder matches: a name, an attribute, an index
ELIDED = "..."  # a listing's ``...`` inside a statement: arguments it leaves out
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
SKIP |= {tokenize.ENDMARKER}


@dataclass(frozen=True)
class Statement:
    """One logical line: its text without whitespace or comments, and where it starts."""

    key: str
    line: int  # 1-based, in the file or listing it came from
    text: str  # the first physical line, for messages


class ListingError(ValueError):
    """A listing that does not follow its engine; the message names the line."""


def engine_files(kind: str) -> list[Path]:
    """Where a lesson's regions may be: its kind's own engine (``engine.py`` or an ``engine/``
    package) first, then the shared engine every DDP training run goes through, then the
    other kinds' engines (a run may use another kind's part: the sampler lesson's loader feeds
    the accumulation lesson's micro-batches). Region names are unique across all of them."""

    def of(folder: Path) -> list[Path]:
        own = [folder / "engine.py"] if (folder / "engine.py").is_file() else []
        return own + sorted((folder / "engine").glob("*.py"))

    others = [f for f in sorted((SRC / "kinds").iterdir()) if f.is_dir() and f.name != kind]
    return (
        of(SRC / "kinds" / kind)
        + sorted((SRC / "engine").glob("*.py"))
        + [path for folder in others for path in of(folder)]
    )


def regions(files: list[Path]) -> dict[str, list[Statement]]:
    """Every ``# listing: name`` … ``# end listing`` region of ``files``, by name."""
    found: dict[str, list[Statement]] = {}
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        start: tuple[str, int] | None = None
        for n, line in enumerate(lines, 1):
            if (m := START.match(line)) is not None:
                if start is not None or m.group(1) in found:
                    raise ListingError(f"{path.name}:{n}: region {m.group(1)!r} nested or twice")
                start = (m.group(1), n)
            elif END.match(line) and start is not None:
                body = _dedent(lines[start[1] : n - 1])
                found[start[0]] = statements(body, first=start[1] + 1)
                start = None
        if start is not None:
            raise ListingError(f"{path.name}:{start[1]}: region {start[0]!r} never ends")
    return found


def _dedent(lines: list[str]) -> str:
    """A region cut out of a function, indented to column 0 (its blocks may be cut open)."""
    depth = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
    return "\n".join(s[depth:] for s in lines)


def statements(code: str, first: int = 1) -> list[Statement]:
    """The logical lines of ``code`` as comparison keys. A region may open a block it does not
    close (``for …:`` with part of its body), so indentation is not checked, only text."""
    flat = "\n".join(line.strip() for line in code.splitlines())
    out: list[Statement] = []
    tokens: list[str] = []
    start = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(flat + "\n").readline):
            if tok.type == tokenize.NEWLINE and tokens:
                out.append(_statement(tokens, start, first, code))
                tokens = []
            elif tok.type not in SKIP:
                if not tokens:
                    start = tok.start[0]
                tokens.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise ListingError(f"line {first}: not Python a listing can hold ({exc})") from None
    if tokens:
        out.append(_statement(tokens, start, first, code))
    return out


def _statement(tokens: list[str], start: int, first: int, code: str) -> Statement:
    kept = [
        t
        for i, t in enumerate(tokens)
        if not (t == "self" and tokens[i + 1 : i + 2] == ["."] and tokens[i - 1 : i] != ["."])
        and not (t == "." and tokens[i - 1 : i] == ["self"] and tokens[i - 2 : i - 1] != ["."])
    ]
    key = "".join(kept)
    key = re.sub(r"^(\w+):[^=]+=(?!=)", r"\1=", key)  # ``name: T = value`` -> ``name=value``
    key = re.sub(r",([)\]}])", r"\1", key)  # a trailing comma is the formatter's
    return Statement(key, first + start - 1, code.splitlines()[start - 1].strip())


def _pattern(key: str) -> re.Pattern[str]:
    parts = [VALUE.join(re.escape(p) for p in piece.split(ANY)) for piece in key.split(ELIDED)]
    return re.compile(".*?".join(parts))


def check(listing: str, shown: list[Statement], where: str = "listing") -> list[str]:
    """What is wrong with ``listing`` against the regions' statements ``shown`` (in order);
    empty when every statement of it is one of theirs, in order, and a listing that leaves
    statements out says so."""
    mine = statements(PLACEHOLDER.sub(ANY, listing))
    written = listing.splitlines()  # a problem quotes the line as written, ``${…}`` and all
    problems: list[str] = []
    at = 0
    for s in mine:
        pattern = _pattern(s.key)
        found = next((i for i in range(at, len(shown)) if pattern.fullmatch(shown[i].key)), None)
        if found is None:
            text = written[s.line - 1].strip()
            problems.append(f"{where} line {s.line}: `{text}` is not in the engine (in order)")
            continue
        at = found + 1
    elided = any(ELIDED in s.key for s in mine)
    if not problems and (elided or len(mine) < len(shown)) and LEFT_OUT not in listing:
        problems.append(f"{where}: leaves engine lines out but has no `{LEFT_OUT} …` comment")
    return problems
