"""S0-S6 end to end, and the attrition rows of the construction stages."""

import json
from collections.abc import Callable
from pathlib import Path

from omnidr.errors import UserError

from ._agents import ModelEndpoint
from ._criteria import run_s2, run_s3_s4
from ._evidence_maps import run_s1a, run_s1b, run_s1c
from ._models import Assembly, Attrition, AuthoringReport, Screening
from ._package import Package
from ._review import finish, review_package


def read_script(path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable authoring script ({exc}); make one with "
                        "`omnidr author demo-script SNAPSHOT TASK FILE`") from None


def construction_attrition(pkg: Package, screening: Screening, assembly: Assembly) -> list[Attrition]:
    s2 = json.loads((pkg.stage("s2") / "candidates.json").read_text("utf-8"))
    made = len(s2["candidates"]) + len(s2["malformed"])
    placed = sum(len(v) for v in assembly.placed.values())
    return [Attrition(step="S2", candidates=made, accepted=len(s2["candidates"]), excluded=len(s2["malformed"]),
                      decision="generated"),
            Attrition(step="S3", candidates=len(s2["candidates"]), accepted=len(screening.kept),
                      excluded=len(screening.removed), decision="screened"),
            Attrition(step="S4", candidates=len(screening.kept), accepted=placed, excluded=len(assembly.capped),
                      decision="assembled" if not assembly.errors else "invalid")]


def _skip(pkg: Package, stage: str, name: str, on_note: Callable[[str], None]) -> bool:
    if pkg.done(stage):
        on_note(f"{name}: done before (authoring/{stage}/record.json); skipped")
        return True
    return False


def author_all(pkg: Package, endpoint: ModelEndpoint, script: dict | None, labels: Path | None,
               on_note: Callable[[str], None], max_rounds: int | None = None) -> AuthoringReport:
    """S1a, S1b, S1c, S2, S3, S4 on an S0 package, then S5/S6 (with a labels file) or the static checks alone.

    Resumable, as `omnidr eval` is: a stage whose record is written (its last write) is skipped, a stage interrupted
    part-way reuses the sessions that finished (`_agents.run_sessions`), and review rounds already decided are not
    decided again. A stage that runs again makes the stages after it run again (`Package.redo_after`)."""
    for stage, name, run in (("s1a", "S1a", lambda: run_s1a(pkg, endpoint, script, on_note)),
                             ("s1b", "S1b", lambda: run_s1b(pkg, endpoint, script, on_note, max_rounds=max_rounds)),
                             ("s1c", "S1c", lambda: run_s1c(pkg, endpoint, script, on_note)),
                             ("s2", "S2", lambda: run_s2(pkg, endpoint, script, on_note))):
        if not _skip(pkg, stage, name, on_note):
            pkg.redo_after(stage)
            run()
    return conclude(pkg, *assembled(pkg, on_note), labels, endpoint, script, on_note)


def assembled(pkg: Package, on_note: Callable[[str], None]) -> tuple[Screening, Assembly]:
    """S3 and S4's records, run now unless done (then a repaired rubric is not assembled over again)."""
    if _skip(pkg, "s4", "S3/S4", on_note):
        return pkg.read("s3", "screening.json", Screening), pkg.read("s4", "assembly.json", Assembly)
    pkg.redo_after("s4")
    return run_s3_s4(pkg)


def conclude(pkg: Package, screening: Screening, assembly: Assembly, labels: Path | None,
             endpoint: ModelEndpoint | None = None, script: dict | None = None,
             on_note: Callable[[str], None] = lambda _m: None) -> AuthoringReport:
    trace = construction_attrition(pkg, screening, assembly)
    if assembly.errors:
        return finish(pkg, AuthoringReport(task_id=pkg.draft().id, status="invalid", attrition=trace,
                                           note="static checks fail: " + "; ".join(assembly.errors[:5])))
    if labels is not None:
        return review_package(pkg, labels, trace, endpoint, script, on_note)
    return finish(pkg, AuthoringReport(task_id=pkg.draft().id, status="frozen", attrition=trace,
                                       note="frozen on the static checks alone: no human review round was given "
                                       "(--labels)"))
