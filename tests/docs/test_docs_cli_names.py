"""No page sends a reader to a command or an option the CLI does not have (issue 38: the README documented
`--max-steps` and `omnidr archive --out X ROOT`, which no command takes)."""

import re

import pytest
from doc_pages import README, ROOT, TREE, inline_spans, option_names, prose_pages, resolve, spellings


@pytest.mark.parametrize("page", prose_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_omnidr_spelling_names_a_real_command_and_its_options(page) -> None:
    problems = []
    for line, text in spellings(page):
        spelling = resolve(text, TREE)
        if spelling is not None and spelling.problems:
            problems += [f"{page.relative_to(ROOT)}:{line}: {p}  (in: {text})" for p in spelling.problems]
    assert not problems, "\n".join(problems)


def test_an_option_named_alone_is_an_option_of_some_command() -> None:
    """A code span holding only options (`--web`, `--search-door PROVIDER@URL`) names options of some command;
    an option of another program is written with that program."""
    every = set().union(*(option_names(c) for c in TREE.values()))
    problems = []
    for page in prose_pages():
        for line, text in inline_spans(page):
            if not text.startswith("--"):
                continue
            for option in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                if option not in every:
                    problems.append(f"{page.relative_to(ROOT)}:{line}: no omnidr command has {option} (in: {text})")
    assert not problems, "\n".join(problems)


def test_the_check_reads_real_spellings_and_catches_wrong_ones() -> None:
    readme = {s.path for _, text in spellings(README) if (s := resolve(text, TREE))}
    assert readme >= {("omnidr", "eval"), ("omnidr", "compare"), ("omnidr", "audit"), ("omnidr", "archive", "make"),
                      ("omnidr", "archive", "verify"), ("omnidr", "rescore"), ("omnidr", "harnesses")}
    everywhere = [s for page in prose_pages() for _, text in spellings(page) if (s := resolve(text, TREE))]
    assert len(everywhere) > 100
    assert resolve("omnidr evaluate snapshots/demo", TREE).problems == ("`omnidr` has no command 'evaluate'",)
    assert resolve("omnidr archive --out X runs/id", TREE).problems == ("`omnidr archive` has no option --out",)
    assert resolve(".venv/bin/omnidr eval --max-steps 3", TREE).problems == ("`omnidr eval` has no option --max-steps",)
    assert resolve("omnidr run --image I --run-dir D -- python3 agent.py --max-steps 3", TREE).problems == ()
    assert resolve("omnidr-skill video frames --window 2", TREE) is None
