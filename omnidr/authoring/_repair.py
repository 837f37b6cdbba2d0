"""S6, issue-driven repair (paper App. E.4): "Fact errors return to evidence acquisition, while criterion errors
return to criterion generation or rubric assembly." Each incorrect item of a review round goes back to the stage
that made it, and that stage runs again with the model, through the gateway, in the sandbox with the doors it had:

- a video fact (origin video) to S1a: one session with the video and the web closed, reading the T_win window its
  time span starts in again;
- a web fact to S1b: one session with the web and without the video, on the route that first found it;
- a criterion found incorrect, and every criterion bound to a fact sent back to S1 (its evidence changed), to S2: one
  model call that writes its replacement candidates from the repaired library; S3 screens them (with the criteria the
  package keeps counting for the duplicate tests) and S4 assembles the rubric again (slots, caps, N/A reasons), with
  the static checks of `snapshot validate`.

The files of round N are under `authoring/s6/round-N/` (`s1a/`, `s1b/`, `s2/`: staging, prompts, runs with their
gateway and network logs; `record.json`: the review, each finding's route and outcome, the replacements).

Open in the paper, chosen here:
- One session per finding (fact or criterion): its prompt names the item, its evidence and the reviewers' notes, and
  everything the session keeps is that item's replacement. A session that keeps nothing drops the item (for a fact,
  the criteria bound to it are then regenerated without it, or dropped).
- The first replacement record of a fact keeps the fact's id, so the next round reviews it under the same name; more
  records get the next free ids (V.. or W..). The first replacement keeps the fact's relations and conflict edges (it
  is a statement about the same thing; the reconciling model of S1c is not called again), and every verification
  state is computed again by the rule of App. E.2.
- A fact that S1c made (an open question with no source) goes back to S1b on the draft's first route.
- An item counts as repaired when its stage gave it at least one replacement that the later stages kept, and as
  excluded otherwise; criteria regenerated because their fact changed are listed in the record, not counted there.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from omnidr.benchmark import (
    Atom,
    EvidenceRecord,
    FactLibrary,
    Origin,
    RubricTree,
    VideoRef,
    atom_facts,
    derive_difficulty,
    derive_verifications,
    direction_inventory,
    validate_snapshot,
)
from omnidr.errors import UserError

from ._agents import ModelEndpoint, Session, agent_evidence, answer_json, marker, run_sessions
from ._criteria import assemble, screen
from ._evidence_maps import FACT_TYPES, _groups, video_map, web_claims
from ._models import ROUTES, Candidate, Reconciliation, Rejected
from ._package import Package, write_library, write_rubric

ID = re.compile(r"^([VW])(\d+)$")


@dataclass
class RepairResult:
    """What one repair round did (written to `authoring/s6/round-N/record.json` by the caller)."""

    library: FactLibrary
    rubric: RubricTree
    routed: list[dict] = field(default_factory=list)
    repaired: int = 0
    excluded: int = 0
    sessions: dict[str, list[str]] = field(default_factory=dict)
    removed: list[Rejected] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    routes: dict[str, str] = field(default_factory=dict)  # web fact id -> the S1b route its replacement came from
    placed: set[str] = field(default_factory=set)  # the criterion ids S4 placed


def _route_of(pkg: Package, fact_id: str) -> str:
    """The S1b route that first found a web fact (S1c's provenance, or an earlier repair's), else the first route."""
    routes = pkg.draft().routes
    for record in sorted(pkg.stage("s6").glob("round-*/record.json"), reverse=True):
        found = (json.loads(record.read_text("utf-8")).get("routes") or {}).get(fact_id)
        if found in routes:
            return found
    path = pkg.stage("s1c") / "reconciliation.json"
    if path.is_file():
        for entry in Reconciliation.model_validate_json(path.read_text("utf-8")).entries:
            if entry.record.id == fact_id:
                for p in entry.provenance:
                    if p.stage == "S1b" and p.key.split("/")[0] in routes:
                        return p.key.split("/")[0]
    return routes[0]


def session_id(kind: str, item: str) -> str:
    """A staging task id (lower-case) for the session that repairs `item`."""
    return f"{kind}-" + re.sub(r"[^a-z0-9_]+", "-", item.lower()).strip("-")


def _notes(notes: dict[str, list[str]], item: str) -> str:
    said = [n for n in notes.get(item, []) if n.strip()]
    return f" Reviewers' notes: {' | '.join(said)}." if said else ""


def _fact_sessions(pkg: Package, facts: list[EvidenceRecord], round_no: int, notes: dict[str, list[str]],
                   script: dict | None) -> tuple[list[tuple[EvidenceRecord, int, Session]],
                                                 list[tuple[EvidenceRecord, str, Session]]]:
    draft = pkg.draft()
    window = pkg.hyperparameters().window_s
    duration = pkg.task(draft).video.duration_s
    steps = ((script or {}).get("repair") or {}).get("facts") or {}
    video, web = [], []
    for rec in facts:
        if rec.origin is Origin.video and rec.video_ref is not None:
            k = int(rec.video_ref.start_s // window)
            a, b = k * window, min((k + 1) * window, duration)
            m = marker("S1a-repair", draft.id, rec.id)
            prompt = (f"{m} ARC stage S6, repair round {round_no}, back to S1a (the video evidence map). You have the "
                      "source video and no web. Do not write a report. Reviewers found this video fact incorrect: "
                      f"\"{rec.claim}\" ({rec.type.value}, {rec.video_ref.start_s:g}-{rec.video_ref.end_s:g} s)."
                      f"{_notes(notes, rec.id)} Read window {k} of the video again, {a:g} s to {b:g} s (read_window "
                      f"index {k}), and record the fact as the video shows it with the evidence tool: modality "
                      "'video', video_time_s, the excerpt you heard or saw, and anchor 'TYPE@START-END' (TYPE one of "
                      f"{', '.join(FACT_TYPES)}; inside this window). Record nothing if the video does not show it. "
                      f"The user's request, for relevance only: {draft.request}")
            video.append((rec, k, Session(session_id("fact", rec.id), prompt, m, steps.get(rec.id))))
        else:
            route = _route_of(pkg, rec.id)
            m = marker("S1b-repair", draft.id, rec.id)
            urls = ", ".join(s.url for s in rec.sources) or "none usable"
            prompt = (f"{m} ARC stage S6, repair round {round_no}, back to S1b (the web evidence map), route "
                      f"'{route}': {ROUTES[route]}. You have the web and no access to the source video. Do not write "
                      f"a report. Reviewers found this claim incorrect: \"{rec.claim}\" ({rec.type.value}; sources: "
                      f"{urls}).{_notes(notes, rec.id)} Research it again and record the claim as its sources state "
                      "it with the evidence tool: the claim, source_url, the verbatim excerpt, the publication date, "
                      f"modality and anchor 'TYPE@TIER' (TYPE one of {', '.join(FACT_TYPES)}; TIER primary, secondary "
                      f"or tertiary). Record nothing if no source supports it. Request: {draft.request}")
            web.append((rec, route, Session(session_id("fact", rec.id), prompt, m, steps.get(rec.id))))
    return video, web


def _next_id(library: FactLibrary, prefix: str, taken: set[str]) -> str:
    numbers = [int(m.group(2)) for f in [*library.facts] for m in [ID.match(f.id)] if m and m.group(1) == prefix]
    numbers += [int(m.group(2)) for t in taken for m in [ID.match(t)] if m and m.group(1) == prefix]
    return f"{prefix}{max(numbers, default=0) + 1:02d}"


def _replace(library: FactLibrary, old: EvidenceRecord, new: list[EvidenceRecord]) -> tuple[FactLibrary, list[str]]:
    """The library with `old` replaced by `new` (the first keeps its id, relations and conflict edges; the others
    get the next free ids); without replacements, `old` and every edge to it are gone."""
    out: list[EvidenceRecord] = []
    ids: list[str] = []
    taken: set[str] = set()
    for rec in library.facts:
        if rec.id != old.id:
            if not new:
                rec = rec.model_copy(update={"relations": [r for r in rec.relations if r.target != old.id],
                                             "conflicts_with": [c for c in rec.conflicts_with if c != old.id]})
            out.append(rec)
            continue
        for n, rep in enumerate(new):
            if n == 0:
                rep = rep.model_copy(update={"id": old.id, "relations": old.relations,
                                             "conflicts_with": old.conflicts_with})
            else:
                rep = rep.model_copy(update={"id": _next_id(library, old.id[0] if ID.match(old.id) else "W", taken)})
            taken.add(rep.id)
            ids.append(rep.id)
            out.append(rep)
    return FactLibrary(task_id=library.task_id, facts=out), ids


def _reverify(library: FactLibrary, video_url: str) -> FactLibrary:
    states = derive_verifications(library, video_url)
    return FactLibrary(task_id=library.task_id,
                       facts=[r.model_copy(update={"verification": states[r.id].state}) for r in library.facts])


def _criterion_session(pkg: Package, atom: Atom, why: str, library: FactLibrary, round_no: int,
                       notes: dict[str, list[str]], script: dict | None) -> Session:
    draft = pkg.draft()
    m = marker("S2-repair", draft.id, atom.id)
    d = direction_inventory().by_id().get(atom.direction)
    facts = "\n".join(f"- {f.id} ({f.origin.value}, {f.type.value}, {f.verification.value}): {f.claim}"
                      for f in library.facts)
    shown = atom.model_dump(mode="json", exclude={"difficulty"}, exclude_none=True)
    prompt = (f"{m} ARC stage S6, repair round {round_no}, back to S2 (leaf generation). Do not use tools and do not "
              f"write a report. This criterion {why}:{_notes(notes, atom.id)}\n{json.dumps(shown, ensure_ascii=False)}"
              f"\nIts direction {atom.direction}" + (f" ({d.name}): {d.description}" if d else "") + ". Write its "
              "replacement from the fact library below under the rules of S2: one yes/no question per criterion with a "
              "fixed expected polarity, each J criterion bound to its fact_id, compound statements and numbers split. "
              'Answer with one JSON object: {"candidates": [{"id", "direction", "criterion", "evaluator": "J|M", '
              '"probe", "polarity", "fact_id", "composes", "evidence_note", "impact"}], "na_reasons": {DIRECTION: '
              'REASON}}; an empty list of candidates drops the criterion. Do not give difficulty.'
              f"\nRequest: {draft.request}\nFacts:\n{facts}")
    steps = (((script or {}).get("repair") or {}).get("criteria") or {}).get(atom.id)
    return Session(session_id("criterion", atom.id), prompt, m, steps)


@dataclass(frozen=True)
class RepairRound:
    """One S6 repair round's settings: the package, the round's number, the reviewers' notes by item id, the model
    door and the offline script the sessions use."""

    pkg: Package
    round_no: int
    notes: dict[str, list[str]]
    endpoint: ModelEndpoint
    script: dict | None
    on_note: Callable[[str], None]

    @property
    def folder(self) -> Path:
        return self.pkg.stage("s6") / f"round-{self.round_no}"

    def run(self, stage: str, sessions: list[Session], **doors) -> dict[str, Path]:
        """Run `sessions` under `round-N/<stage>` and note their folders in `out.sessions` (by the caller)."""
        return run_sessions(self.pkg, self.folder / stage, sessions, endpoint=self.endpoint, on_note=self.on_note,
                            **doors)


def repair_with_model(rnd: RepairRound, library: FactLibrary, rubric: RubricTree, wrong_facts: list[str],
                      wrong_criteria: list[str]) -> RepairResult:
    """One S6 repair round: the S1 sessions of the incorrect facts, then the S2 calls of the incorrect criteria and of
    the criteria bound to those facts, S3 and S4 on what they wrote (see the module docstring)."""
    out = RepairResult(library=library, rubric=rubric)
    library = _repair_facts(rnd, library, wrong_facts, out)
    # criteria: the ones found incorrect, and the ones whose evidence changed
    gone = set(wrong_facts)
    targets: list[tuple[Atom, str]] = []
    for a in rubric.atoms:
        if a.id in wrong_criteria:
            targets.append((a, "was found incorrect by the reviewers"))
        elif gone & set(atom_facts(a)):
            targets.append((a, f"is bound to fact(s) {', '.join(sorted(gone & set(atom_facts(a))))}, which review "
                               "sent back to evidence acquisition (see the library below for what they now say)"))
    regen = _regenerate_criteria(rnd, targets, library, dict(rubric.na_reasons), out)
    rubric = _rescreen_and_assemble(rnd, library, rubric, targets, regen, out)
    for a, why in targets:
        ids = [c for c, origin in regen.source.items() if origin == a.id and c in out.placed]
        finding = a.id in wrong_criteria
        out.routed.append({"round": rnd.round_no, "item": a.id, "kind": "criterion", "stage": "S2",
                           **({} if finding else {"why": why}), "replaced_by": ids,
                           "outcome": "repaired" if ids else "excluded"})
        if finding:
            out.repaired += bool(ids)
            out.excluded += not ids
    draft = rnd.pkg.draft()
    write_library(rnd.pkg, draft, library)
    write_rubric(rnd.pkg, draft, rubric)
    check = validate_snapshot(rnd.pkg.root)
    out.errors = [f"{p.file}: {p.path}: {p.message}" for p in check.errors]
    out.warnings = [f"{p.file}: {p.path}: {p.message}" for p in check.warnings]
    out.library, out.rubric = library, rubric
    return out


def _repair_video_facts(rnd: RepairRound, video: list[tuple[EvidenceRecord, int, Session]],
                        out: RepairResult) -> dict[str, list[EvidenceRecord]]:
    """S1a again (the video, no web) for each incorrect video fact: its replacements by the old fact's id."""
    if not video:
        return {}
    task = rnd.pkg.task(rnd.pkg.draft())
    window = rnd.pkg.hyperparameters().window_s
    done = rnd.run("s1a", [s for _, _, s in video], capability="multimodal", proxy_mode="deny", with_video=True)
    out.sessions["S1a"] = [done[s.id].relative_to(rnd.pkg.root).as_posix() for _, _, s in video]
    replaced: dict[str, list[EvidenceRecord]] = {}
    for rec, k, s in video:
        vmap = video_map(agent_evidence(done[s.id]), task.video.duration_s, window, [], session_window=k,
                         prefix=f"s6/round-{rnd.round_no}/{rec.id}/")
        out.removed += vmap.rejected
        replaced[rec.id] = [EvidenceRecord(id=rec.id, claim=f.claim, type=f.type, origin=Origin.video,
                                           video_ref=VideoRef(start_s=f.start_s, end_s=f.end_s),
                                           verification=rec.verification) for f in vmap.facts]
    return replaced


def _repair_web_facts(rnd: RepairRound, web: list[tuple[EvidenceRecord, str, Session]], out: RepairResult,
                      routes: dict[str, str]) -> dict[str, list[EvidenceRecord]]:
    """S1b again (the web, no video) on the route that found each incorrect web fact: its replacements by the old
    fact's id; `routes` gets the route of each."""
    if not web:
        return {}
    done = rnd.run("s1b", [s for _, _, s in web], capability="multimodal", proxy_mode=rnd.endpoint.web,
                   with_video=False)
    out.sessions["S1b"] = [done[s.id].relative_to(rnd.pkg.root).as_posix() for _, _, s in web]
    replaced: dict[str, list[EvidenceRecord]] = {}
    for rec, route, s in web:
        kept, bad = web_claims(agent_evidence(done[s.id]), route, rnd.round_no)
        out.removed += [b.model_copy(update={"item": f"s6/round-{rnd.round_no}/{rec.id}/{b.item}"}) for b in bad]
        records = []
        for group in _groups(kept):
            sources: dict = {}
            for c in group:
                sources.setdefault(c.url, {"url": c.url, "kind": c.kind, "tier": c.tier,
                                           "published": c.date or None, "quote": c.quote or None})
            records.append(EvidenceRecord.model_validate({
                "id": rec.id, "claim": group[0].claim, "type": group[0].type, "origin": "web",
                "sources": list(sources.values()), "verification": "single_source"}))
        replaced[rec.id] = records
        routes[rec.id] = route
    return replaced


def _repair_facts(rnd: RepairRound, library: FactLibrary, wrong_facts: list[str], out: RepairResult) -> FactLibrary:
    """S1 for the incorrect facts: each replaced by what its stage found again (or excluded), then the library's
    verification states computed again."""
    by_id = {f.id: f for f in library.facts}
    video, web = _fact_sessions(rnd.pkg, [by_id[f] for f in wrong_facts], rnd.round_no, rnd.notes, rnd.script)
    routes: dict[str, str] = {}
    replaced = {**_repair_video_facts(rnd, video, out), **_repair_web_facts(rnd, web, out, routes)}
    for fid in wrong_facts:
        library, ids = _replace(library, by_id[fid], replaced.get(fid, []))
        stage = "S1a" if by_id[fid].origin is Origin.video else "S1b"
        out.routed.append({"round": rnd.round_no, "item": fid, "kind": "fact", "stage": stage,
                           "replaced_by": ids, "outcome": "repaired" if ids else "excluded"})
        if ids:
            out.repaired += 1
            out.routes.update({i: routes[fid] for i in ids if fid in routes})
        else:
            out.excluded += 1
    return _reverify(library, rnd.pkg.task(rnd.pkg.draft()).video.url)


@dataclass
class Regenerated:
    """What S2 wrote again: the candidates, the target criterion each came from, the N/A reasons so far."""

    candidates: list[Candidate]
    source: dict[str, str]
    na_given: dict[str, str]


def _regenerate_criteria(rnd: RepairRound, targets: list[tuple[Atom, str]], library: FactLibrary,
                         na_given: dict[str, str], out: RepairResult) -> Regenerated:
    """S2 again for each target criterion."""
    candidates: list[Candidate] = []
    source: dict[str, str] = {}
    if not targets:
        return Regenerated(candidates, source, na_given)
    sessions = [_criterion_session(rnd.pkg, a, why, library, rnd.round_no, rnd.notes, rnd.script) for a, why in targets]
    done = rnd.run("s2", sessions, capability="interface_only", proxy_mode="deny", with_video=False)
    out.sessions["S2"] = [done[s.id].relative_to(rnd.pkg.root).as_posix() for s in sessions]
    for a, _ in targets:
        try:
            answer = answer_json(done[session_id("criterion", a.id)], "S2 repair")
        except UserError as exc:
            out.removed.append(Rejected(item=a.id, reason=f"no replacement: {exc}"))
            continue
        for n, raw in enumerate(answer.get("candidates") or []):
            try:
                cand = Candidate.model_validate(raw)
            except ValueError as exc:
                out.removed.append(Rejected(item=f"{a.id}#{n}", reason=f"malformed: {str(exc).splitlines()[0]}"))
                continue
            candidates.append(cand)
            source.setdefault(cand.id, a.id)
        for d, reason in (answer.get("na_reasons") or {}).items():
            na_given.setdefault(str(d), str(reason))
    return Regenerated(candidates, source, na_given)


def _rescreen_and_assemble(rnd: RepairRound, library: FactLibrary, rubric: RubricTree, targets: list[tuple[Atom, str]],
                           regen: Regenerated, out: RepairResult) -> RubricTree:
    """S3 against the library as repaired (the kept criteria counting for duplicates, their difficulty derived
    again), then S4; `out.placed` gets the ids placed."""
    draft = rnd.pkg.draft()
    keep = [a for a in rubric.atoms if a.id not in {t.id for t, _ in targets}]
    origins = {f.id: f.origin for f in library.facts}
    states = {f.id: f.verification for f in library.facts}
    keep = [a.model_copy(update={"difficulty": d[0]}) if (d := derive_difficulty(a, origins, states)) else a
            for a in keep]
    screening, fresh = screen(regen.candidates, library, draft.language.value == "zh", existing=keep)
    out.removed += screening.removed
    lost = {t.direction for t, _ in targets} - {a.direction for a in [*keep, *fresh]}
    for direction in sorted(lost):
        names = ", ".join(t.id for t, _ in targets if t.direction == direction)
        regen.na_given.setdefault(direction, f"Review round {rnd.round_no} of task {rubric.task_id} sent its criteria ({names}) "
                                             "back for regeneration and no replacement passed screening; none is "
                                             "retained.")
    cap = draft.budgets.high_volume_cap or int(rnd.pkg.hyperparameters().kappa)
    rubric, placed, capped, _ = assemble([*keep, *fresh], regen.na_given, cap, rubric.task_id)
    out.removed += capped
    out.placed = {i for ids in placed.values() for i in ids}
    return rubric
