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


def author_all(pkg: Package, endpoint: ModelEndpoint, script: dict | None, labels: Path | None,
               on_note: Callable[[str], None], max_rounds: int | None = None) -> AuthoringReport:
    """S1a, S1b, S1c, S2, S3, S4 on an S0 package, then S5/S6 (with a labels file) or the static checks alone."""
    run_s1a(pkg, endpoint, script, on_note)
    run_s1b(pkg, endpoint, script, on_note, max_rounds=max_rounds)
    run_s1c(pkg, endpoint, script, on_note)
    run_s2(pkg, endpoint, script, on_note)
    return conclude(pkg, *run_s3_s4(pkg), labels)


def conclude(pkg: Package, screening: Screening, assembly: Assembly, labels: Path | None) -> AuthoringReport:
    trace = construction_attrition(pkg, screening, assembly)
    if assembly.errors:
        return finish(pkg, AuthoringReport(task_id=pkg.draft().id, status="invalid", attrition=trace,
                                           note="static checks fail: " + "; ".join(assembly.errors[:5])))
    if labels is not None:
        return review_package(pkg, labels, trace)
    return finish(pkg, AuthoringReport(task_id=pkg.draft().id, status="frozen", attrition=trace,
                                       note="frozen on the static checks alone: no human review round was given "
                                       "(--labels)"))
