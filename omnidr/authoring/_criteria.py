"""S2 (leaf generation), S3 (screening) and S4 (assembly), App. E.3.

Open in the paper, chosen here:
- S2 is one model call through the gateway (a tool-free agent session, see `_agents`): the prompt carries the fact
  library, the 23 directions with their templates (the inventory's descriptions), the probe catalog and the rules of
  App. E.3; the answer is JSON candidates and instance-specific N/A reasons.
- S3's tests, in this order, each removing with its reason: no evidence (a J atom without a known fact, a fact id the
  library lacks, an M atom with neither fact nor impact); outside its direction (unknown direction, an evaluator the
  direction does not take, a fact of the wrong origin by the inventory's `fact_origin`, a probe that does not
  measure the direction); several claims (more than one question, or 'and'/'but' joining two questions, or ';');
  subjective wording (the `snapshot validate` word list); several readings ('or', 'either', 'and/or', ' / '); a
  duplicate of a kept criterion (same normalised wording).
- Difficulty is computed by `omnidr.benchmark.derive_difficulty` (App. E.3); an atom bound to no fact (a
  presentation or structure check) has no evidence level in the paper's rule and is given L0 here.
- S4 caps a high-volume direction at `Budgets.high_volume_cap` atoms (default kappa), keeping S2's order; a
  direction without atoms takes S2's N/A reason for it, and one without a reason is left for `snapshot validate`
  to report (the package then fails S5's static checks and S6 routes it back to S2).
"""

import json
import re
from collections.abc import Callable, Sequence

from omnidr.benchmark import (
    Atom,
    Difficulty,
    FactLibrary,
    Origin,
    RubricTree,
    derive_difficulty,
    direction_inventory,
    probe_catalog,
    subjective_wording,
    validate_snapshot,
)
from omnidr.errors import UserError

from ._agents import ModelEndpoint, Session, answer_json, marker, run_sessions
from ._evidence_maps import normalize
from ._models import Assembly, Candidate, Rejected, Screening
from ._package import Package, dump, write_rubric

COMPOUND = re.compile(r"\?.*\?|;|\b(and|but)\s+(does|do|did|is|are|was|were|has|have|can|will)\b", re.IGNORECASE | re.DOTALL)
READINGS = re.compile(r"\b(or|either)\b|\band/or\b|\s/\s", re.IGNORECASE)


def s2_session(pkg: Package, library: FactLibrary, script: dict | None) -> Session:
    draft = pkg.draft()
    m = marker("S2", draft.id)
    facts = "\n".join(f"- {f.id} ({f.origin.value}, {f.type.value}, {f.verification.value}): {f.claim}"
                      for f in library.facts)
    directions = "\n".join(f"- {d.id} {d.name} [{d.dimension.value}, evaluator {d.evaluator.value}"
                           f"{', ' + d.fact_origin + ' facts' if d.fact_origin else ''}]: {d.description}"
                           for d in direction_inventory().directions)
    probes = "\n".join(f"- {p.name}({', '.join(f'{k}: {v}' for k, v in p.params.items())}) for "
                       f"{', '.join(p.directions)}" for p in probe_catalog().probes)
    prompt = (f"{m} ARC stage S2, leaf generation. Do not use tools and do not write a report. Turn the fact library "
              "into candidate binary criteria for the direction templates below (fact coverage, faithfulness, causal "
              "explanation, comparison, cross-source linkage, citation support, report behaviour). Each criterion is "
              "one yes/no question with a fixed expected polarity; split compound statements and important numbers "
              "into separate criteria; each J criterion names its fact_id (and `composes` for other facts it "
              "combines); each M criterion names a probe and, without a fact, the reader-facing impact of failing. "
              'Answer with one JSON object: {"candidates": [{"id", "direction", "criterion", "evaluator": "J|M", '
              '"probe": {"name", "params"} or null, "polarity": "yes|no", "fact_id", "composes", "evidence_note", '
              '"impact"}], "na_reasons": {DIRECTION: REASON for this task}}. Do not give difficulty.'
              f"\nRequest: {draft.request}\nFacts:\n{facts}\nDirections:\n{directions}\nProbes:\n{probes}")
    return Session("s2", prompt, m, (script or {}).get("s2"))


def run_s2(pkg: Package, endpoint: ModelEndpoint, script: dict | None, on_note: Callable[[str], None]) -> list[Candidate]:
    draft = pkg.draft()
    library = FactLibrary.model_validate_json((pkg.task_dir(draft) / "facts.json").read_text("utf-8"))
    if not library.facts:
        raise UserError("S2: the fact library is empty; run S1c first")
    stage = pkg.stage("s2")
    session = s2_session(pkg, library, script)
    attempt = run_sessions(pkg, stage, [session], capability="interface_only", proxy_mode="deny", with_video=False,
                           endpoint=endpoint, on_note=on_note)[session.id]
    answer = answer_json(attempt, "S2")
    candidates, malformed = [], []
    for i, raw in enumerate(answer.get("candidates") or []):
        try:
            candidates.append(Candidate.model_validate(raw))
        except ValueError as exc:
            malformed.append(Rejected(item=str((raw or {}).get("id", i)), reason=f"malformed: {str(exc).splitlines()[0]}"))
    dump(stage / "answer.json", answer)
    dump(stage / "candidates.json", {"candidates": [c.model_dump() for c in candidates],
                                     "na_reasons": answer.get("na_reasons") or {},
                                     "malformed": [r.model_dump() for r in malformed]})
    dump(stage / "record.json", {"stage": "S2", "inputs": [f"tasks/{draft.id}/facts.json"],
                                 "prompt": f"prompt-{session.id}.txt", "attempt": attempt.relative_to(pkg.root).as_posix(),
                                 "model_answer": "answer.json", "outputs": ["candidates.json"],
                                 "candidates": len(candidates), "malformed": len(malformed)})
    return candidates


def _problem(c: Candidate, library: FactLibrary, zh: bool) -> str | None:
    facts = {f.id: f for f in library.facts}
    directions = direction_inventory().by_id()
    probes = probe_catalog().by_name()
    if c.evaluator == "J" and not c.fact_id:
        return "no evidence: a judged criterion names no fact"
    unknown = [f for f in [c.fact_id, *c.composes] if f and f not in facts]
    if unknown:
        return f"no evidence: fact {', '.join(unknown)} is not in the library"
    if c.evaluator == "M" and not c.fact_id and not (c.impact or "").strip():
        return "no evidence: a machine check without a fact states no reader-facing impact"
    d = directions.get(c.direction)
    if d is None:
        return f"outside its direction: unknown direction {c.direction!r}"
    if d.evaluator.value not in ("both", c.evaluator):
        return f"outside its direction: {d.id} takes {d.evaluator.value} atoms, not {c.evaluator}"
    if d.fact_origin and c.fact_id and facts[c.fact_id].origin is not Origin(d.fact_origin):
        return f"outside its direction: {d.id} checks {d.fact_origin} facts, {c.fact_id} is a {facts[c.fact_id].origin.value} fact"
    if c.evaluator == "M":
        spec = probes.get((c.probe or {}).get("name", ""))
        if spec is None:
            return f"outside its direction: unknown probe {(c.probe or {}).get('name')!r}"
        if d.id not in spec.directions:
            return f"outside its direction: probe {spec.name} measures {', '.join(spec.directions)}, not {d.id}"
    if COMPOUND.search(c.criterion):
        return "several claims: a compound criterion (split it into one question per claim)"
    if (word := subjective_wording(c.criterion, zh)) is not None:
        return f"subjective wording '{word}'"
    if (found := READINGS.search(c.criterion)) is not None:
        return f"several readings: '{found.group(0).strip()}' admits more than one answer"
    return None


def _atom(c: Candidate, difficulty: Difficulty) -> Atom:
    return Atom.model_validate({**c.model_dump(exclude_none=True), "difficulty": difficulty.value})


def screen(candidates: list[Candidate], library: FactLibrary, zh: bool,
           existing: Sequence[Atom] = ()) -> tuple[Screening, list[Atom]]:
    """S3: remove what fails a screening test (with its reason), compute each kept atom's difficulty. `existing`
    atoms (S6: the criteria a repair keeps) count for the duplicate tests."""
    origins = {f.id: f.origin for f in library.facts}
    states = {f.id: f.verification for f in library.facts}
    kept: list[Atom] = []
    removed: list[Rejected] = []
    seen: dict[str, str] = {normalize(a.criterion): a.id for a in existing}
    ids: set[str] = {a.id for a in existing}
    levels: dict[str, str] = {}
    for c in candidates:
        problem = _problem(c, library, zh)
        if problem is None and c.id in ids:
            problem = f"duplicate id {c.id}"
        if problem is None and normalize(c.criterion) in seen:
            problem = f"duplicate of {seen[normalize(c.criterion)]}"
        if problem is not None:
            removed.append(Rejected(item=c.id, reason=problem))
            continue
        placeholder = _atom(c, Difficulty.L0)
        derived = derive_difficulty(placeholder, origins, states)
        level, why = derived if derived else (Difficulty.L0, "no fact: a structure or presentation check (L0 by choice)")
        kept.append(_atom(c, level))
        levels[c.id] = f"{level.value}: {why}"
        seen[normalize(c.criterion)] = c.id
        ids.add(c.id)
    return Screening(kept=[a.id for a in kept], removed=removed, difficulty=levels), kept


def assemble(atoms: list[Atom], na_given: dict[str, str], cap: int, task_id: str) -> tuple[RubricTree, dict, list[Rejected], dict]:
    """S4: atoms into the 23 direction slots (inventory order), high-volume caps, N/A reasons for empty slots."""
    slots: dict[str, list[Atom]] = {d.id: [] for d in direction_inventory().directions}
    capped: list[Rejected] = []
    high = {d.id for d in direction_inventory().directions if d.high_volume}
    for a in atoms:
        if a.direction in high and len(slots[a.direction]) >= cap:
            capped.append(Rejected(item=a.id, reason=f"high-volume cap: {a.direction} holds {cap} atoms"))
            continue
        slots[a.direction].append(a)
    na = {d: str(na_given[d]) for d in slots if not slots[d] and str(na_given.get(d) or "").strip()}
    rubric = RubricTree(task_id=task_id, atoms=[a for d in slots for a in slots[d]], na_reasons=na)
    return rubric, {d: [a.id for a in slots[d]] for d in slots}, capped, na


def run_s3_s4(pkg: Package) -> tuple[Screening, Assembly]:
    draft = pkg.draft()
    library = FactLibrary.model_validate_json((pkg.task_dir(draft) / "facts.json").read_text("utf-8"))
    path = pkg.stage("s2") / "candidates.json"
    if not path.is_file():
        raise UserError(f"{path} is missing: run `omnidr author generate` (S2) first")
    s2 = json.loads(path.read_text("utf-8"))
    candidates = [Candidate.model_validate(c) for c in s2["candidates"]]
    screening, atoms = screen(candidates, library, draft.language.value == "zh")
    dump(pkg.stage("s3") / "screening.json", screening)
    dump(pkg.stage("s3") / "record.json", {"stage": "S3", "inputs": ["s2/candidates.json", f"tasks/{draft.id}/facts.json"],
                                           "outputs": ["screening.json"], "kept": len(screening.kept),
                                           "removed": [r.model_dump() for r in screening.removed]})
    cap = draft.budgets.high_volume_cap or int(pkg.hyperparameters().kappa)
    rubric, placed, capped, na = assemble(atoms, s2.get("na_reasons") or {}, cap, draft.id)
    write_rubric(pkg, draft, rubric)
    report = validate_snapshot(pkg.root)
    assembly = Assembly(placed=placed, na_reasons=na, capped=capped,
                        errors=[f"{p.file}: {p.path}: {p.message}" for p in report.errors],
                        warnings=[f"{p.file}: {p.path}: {p.message}" for p in report.warnings])
    dump(pkg.stage("s4") / "assembly.json", assembly)
    dump(pkg.stage("s4") / "record.json", {"stage": "S4", "inputs": ["s3/screening.json"], "cap": cap,
                                           "outputs": ["assembly.json", f"tasks/{draft.id}/rubric.json"],
                                           "atoms": len(rubric.atoms), "errors": assembly.errors,
                                           "warnings": assembly.warnings})
    return screening, assembly
