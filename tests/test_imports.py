"""What a command pays to start: no stage loads the gateway's server (aiohttp) unless it runs a gateway."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("module", ["omnidr.cli", "omnidr.harness", "omnidr.pipeline", "omnidr.trajectory",
                                    "omnidr.attempts", "omnidr.evaluation"])
def test_a_stage_loads_without_the_gateway_server(module):
    check = f"import sys, {module}; print(sorted(m for m in ('aiohttp', 'sandbox.gateway._app') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_gateway_package_still_serves_its_server_names():
    from sandbox.gateway import RunningGateway, start_gateway

    assert start_gateway.__module__ == RunningGateway.__module__ == "sandbox.gateway._app"


# -- the stage graph: no cycles, no reaching into another stage's private modules -------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _stage(module: str) -> str | None:
    """The stage a module belongs to: `omnidr.<stage>` or `sandbox.<part>`; the shared core (omnidr's `_files`,
    `errors`, `paths`, ...) and the CLI are not stages."""
    parts = module.split(".")
    if parts[0] not in ("omnidr", "sandbox") or len(parts) < 2 or parts[1].startswith("_"):
        return None
    if parts[0] == "omnidr" and parts[1] in ("cli", "errors", "paths"):
        return None
    return ".".join(parts[:2])


def _imports():
    """(importing file, its stage, imported module) for every import in the packages, those inside functions too."""
    for path in sorted([*(ROOT / "omnidr").rglob("*.py"), *(ROOT / "sandbox").rglob("*.py")]):
        rel = path.relative_to(ROOT).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        package = module if rel.name == "__init__" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                yield path.relative_to(ROOT).as_posix(), _stage(module), target


def _stage_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for _, source, target in _imports():
        dest = _stage(target)
        if source and dest and dest != source:
            graph.setdefault(source, set()).add(dest)
    return graph


def test_no_stage_imports_another_stages_private_module():
    private = sorted({f"{file}: {target}" for file, source, target in _imports()
                      if (dest := _stage(target)) and dest != source
                      and any(p.startswith("_") and not p.startswith("__") for p in target.split(".")[2:3])})
    assert private == [], "import what another stage's __init__ re-exports instead:\n" + "\n".join(private)


def test_the_stages_import_each_other_without_cycles_so_importing_one_never_loads_a_stage_that_depends_on_it():
    graph = _stage_graph()
    seen: dict[str, str] = {}  # stage -> "open" while on the path, "done" after

    def visit(stage: str, path: list[str]) -> None:
        seen[stage] = "open"
        for dep in sorted(graph.get(stage, ())):
            assert seen.get(dep) != "open", "import cycle: " + " -> ".join([*path, stage, dep])
            if dep not in seen:
                visit(dep, [*path, stage])
        seen[stage] = "done"

    for stage in sorted(graph):
        if stage not in seen:
            visit(stage, [])
    # and at run time: importing a stage loads none of the stages that depend on it (directly or not)
    dependents: dict[str, set[str]] = {s: set() for s in graph}
    for stage, deps in graph.items():
        for dep in deps:
            dependents.setdefault(dep, set()).add(stage)
    changed = True
    while changed:
        changed = False
        for users in dependents.values():
            more = set().union(*(dependents.get(u, set()) for u in users)) - users
            if more:
                users |= more
                changed = True
    stages = sorted(dependents)
    check = ("import importlib, json, sys; out = {}\n"
             "for s in json.loads(sys.argv[1]):\n"
             "    before = set(sys.modules)\n"
             "    importlib.import_module(s)\n"
             "    out[s] = sorted({'.'.join(m.split('.')[:2]) for m in set(sys.modules) - before})\n"
             "    [sys.modules.pop(m) for m in set(sys.modules) - before]\n"
             "print(json.dumps(out))")
    for stage in stages:  # one fresh interpreter per stage: nothing loaded before it
        loaded = json.loads(subprocess.run([sys.executable, "-c", check, json.dumps([stage])], capture_output=True,
                                           text=True, check=True, cwd=ROOT).stdout)[stage]
        assert not set(loaded) & dependents[stage], (stage, sorted(set(loaded) & dependents[stage]))
