"""The docs site builds with --strict, and its CLI reference, generated from the Click commands, lists every
command and every option the CLI has (issue 38: a reference written by hand drifted from the code)."""

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_pages import ROOT, TREE, option_names


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `make test` builds it (mkdocs build --strict), into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def sections(page: str) -> dict[str, str]:
    """The reference page cut at each command's heading: its anchor (`omnidr-archive-make`) -> its HTML."""
    parts = re.split(r'(<h[1-6] id="omnidr[^"]*")', page)
    return {re.search(r'id="([^"]+)"', parts[k]).group(1): parts[k + 1] for k in range(1, len(parts), 2)}


def test_the_reference_lists_every_command_with_each_of_its_options(site) -> None:
    page = (site / "reference" / "cli" / "index.html").read_text("utf-8")
    assert "Sentinel" not in page  # Click's "no default" marker is shown as an empty cell (docs/hooks)
    found = sections(page)
    missing = []
    for path, command in TREE.items():
        anchor = "-".join(path)
        if anchor not in found:
            missing.append(f"{' '.join(path)}: no section")
            continue
        section = html.unescape(found[anchor])
        usage = re.search(r"Usage:.*?<code>(omnidr[^\n<]*)", section, re.S)
        if not usage or not usage.group(1).startswith(" ".join(path) + " "):
            missing.append(f"{' '.join(path)}: no usage line")
        listed = {name.strip() for cell in re.findall(r"<td><code>([^<]+)</code></td>", section)
                  for name in re.split(r"[,/]", cell)}
        missing += [f"{' '.join(path)}: {name}" for name in sorted(option_names(command) - listed)]
    assert not missing, "not in the CLI reference:\n" + "\n".join(missing)
    assert len(TREE) > 30  # every command, the on-demand stage commands included


def test_every_page_of_the_site_is_built(site) -> None:
    pages = {p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md")}
    built = {p.parent.relative_to(site) for p in site.rglob("index.html")}
    assert {Path(".") if p.name == "index" else p for p in pages} <= built
