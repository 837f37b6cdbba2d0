"""The README's and the tutorial's shell blocks marked runnable (`<!-- runnable -->` on the line before the fence;
docs/guides/development.md, "Writing the docs") run as written from the repository root; the other blocks name
real `make` targets (their `omnidr` lines are checked by test_docs_cli_names.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_pages import README, ROOT, SHELL, TUTORIAL, fences, shell_lines

PAGES = (README, TUTORIAL)


def runnable_lines() -> list[tuple[str, str]]:
    return [(f"{fence.page.name}:{fence.line}", line) for page in PAGES for fence in fences(page) if fence.runnable
            for line in shell_lines(fence.body)]


def test_the_readme_and_the_tutorial_each_mark_a_runnable_block() -> None:
    for page in PAGES:
        assert [f for f in fences(page) if f.runnable], f"{page.name} marks no block runnable"


# a runnable line may check a snapshot, which probes its videos (ffprobe) and checks it in Chromium
@pytest.mark.media
@pytest.mark.browser
@pytest.mark.parametrize(("where", "line"), runnable_lines(), ids=lambda v: v)
def test_a_runnable_line_runs_as_written(where: str, line: str) -> None:
    env = dict(os.environ)
    # `omnidr` and `.venv/bin/omnidr` are this installation's program, wherever its venv is
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = line
    if not (ROOT / ".venv" / "bin" / "omnidr").exists():
        command = re.sub(r"(^|\s)\.venv/bin/omnidr\b", r"\1omnidr", line)
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"{where}: `{line}` exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip(), f"{where}: `{line}` printed nothing"


def test_make_targets_named_in_the_readme_and_the_tutorial_exist() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    named = {(f"{fence.page.name}:{fence.line}", m.group(1)) for page in PAGES for fence in fences(page)
             if (fence.info.split() or [""])[0] in SHELL for line in shell_lines(fence.body)
             for m in re.finditer(r"(?:^|&&\s*)make\s+([a-z][a-z-]*)", line)}
    assert {"setup", "test", "eval"} <= {t for _, t in named}
    assert not [(w, t) for w, t in named if t not in targets]
