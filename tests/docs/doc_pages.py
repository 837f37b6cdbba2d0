"""What the docs tests read: the pages, their code, the `omnidr` command tree, and how a spelling resolves in it."""

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
from testkit import ROOT

from omnidr.cli import cli

README = ROOT / "README.md"
TUTORIAL = ROOT / "docs" / "tutorial.md"
GENERATED = ROOT / "docs" / "reference" / "cli.md"  # the mkdocs-click directive, nothing written by hand
RUNNABLE_MARK = "<!-- runnable -->"


def prose_pages() -> list[Path]:
    """The README and every hand-written page of the site."""
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if p != GENERATED)
    return [README, *pages]


def commands(group: click.Command = cli, path: tuple[str, ...] = ("omnidr",)) -> dict[tuple[str, ...], click.Command]:
    """Every command of the `omnidr` tree by its path, groups included, the on-demand stage commands loaded."""
    found = {path: group}
    if isinstance(group, click.Group):
        ctx = click.Context(group, info_name=path[-1])
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path)} lists {name} but cannot load it"
            found.update(commands(sub, (*path, name)))
    return found


def option_names(command: click.Command) -> set[str]:
    """The long and short spellings of every option of `command` that `--help` shows, flags' negative forms and
    --help included (a hidden option is the evaluator image's own, not the user's)."""
    names = {"--help"}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


@dataclass(frozen=True)
class Fence:
    """A fenced code block: its info string, its lines, and whether the runnable marker stands right before it."""

    page: Path
    line: int
    info: str
    body: list[str]
    runnable: bool


def fences(page: Path) -> list[Fence]:
    lines = page.read_text("utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = re.match(r"^(\s*)(`{3,})(.*)$", lines[i])
        if not opening:
            i += 1
            continue
        indent, ticks, info = opening.groups()
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{ticks}\s*$", lines[j]):
            j += 1
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:j]]
        marked = i > 0 and lines[i - 1].strip() == RUNNABLE_MARK
        found.append(Fence(page, i + 1, info.strip(), body, marked))
        i = j + 1
    return found


def shell_lines(body: list[str]) -> list[str]:
    """The logical lines of a shell block: backslash continuations joined, comments and blank lines dropped."""
    out, current = [], ""
    for raw in body:
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        text = _drop_comment(current).strip()
        if text:
            out.append(text)
        current = ""
    if _drop_comment(current).strip():
        out.append(_drop_comment(current).strip())
    return out


def _drop_comment(line: str) -> str:
    """The line up to an unquoted ` #` (a shell comment)."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            return line[:k]
    return line


def inline_spans(page: Path) -> list[tuple[int, str]]:
    """Every inline code span outside fenced blocks, with its line number (single- and double-backtick spans)."""
    spans, in_fence = [], False
    for n, line in enumerate(page.read_text("utf-8").splitlines(), 1):
        if re.match(r"^\s*`{3,}", line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in re.finditer(r"(``?)(?!`)(.+?)(?<!`)\1(?!`)", line):
            spans.append((n, match.group(2).strip()))
    return spans


def words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote in a placeholder-laden span: plain words will do
        return text.split()


PROGRAM = re.compile(r"^(?:\$ )?(?:\S*/)?omnidr$")


@dataclass(frozen=True)
class Spelling:
    """An `omnidr ...` spelling in the docs and what it resolves to: a command path, or what is wrong with it."""

    text: str
    path: tuple[str, ...]
    problems: tuple[str, ...]


def resolve(text: str, tree: dict[tuple[str, ...], click.Command]) -> Spelling | None:
    """The command a line or span that starts with `omnidr` names, and every option it gives that the command does
    not have; None when the text does not start with the program."""
    tokens = [t.strip("[](),;") for t in words(text)]
    if not tokens or not PROGRAM.match(tokens[0]):
        return None
    path, problems, k = ("omnidr",), [], 1
    while isinstance(tree[path], click.Group) and k < len(tokens):
        token = tokens[k]
        if (*path, token) in tree:
            path, k = (*path, token), k + 1
        elif token.startswith("-") or token in ("COMMAND", "...", ""):
            break
        else:
            problems.append(f"`{' '.join(path)}` has no command {token!r}")
            break
    known = option_names(tree[path])
    for token in tokens[k:]:
        if token == "--":  # what follows is the agent's own command line (`omnidr run ... -- CMD ARGS`)
            break
        for part in token.split("|"):  # `--evaluator docker|host`, `--format terminal|markdown|json`
            option = part.split("=", 1)[0].strip(".:`'\"")
            if option.startswith("-") and len(option) > 1 and not option[1:].isdigit() and option not in known:
                problems.append(f"`{' '.join(path)}` has no option {option}")
    return Spelling(text, path, tuple(problems))


TREE = commands()
SHELL = {"", "sh", "bash", "shell", "console"}


def spellings(page: Path) -> list[tuple[int, str]]:
    """The shell lines of a page's shell blocks and its inline code spans, with their line numbers."""
    found = []
    for fence in fences(page):
        if (fence.info.split() or [""])[0] in SHELL:
            found += [(fence.line, line) for line in shell_lines(fence.body)]
    return found + inline_spans(page)
