"""S5's human review of the package (App. A.5, E.4) and S6's repair routing, R_max and the attrition trace (App. E.1).

A labels file is JSON Lines, one `ReviewLabel` a line: {"round", "rater", "item", "label": "correct"|"incorrect"},
where item is a fact id or an atom id of the package.

Open in the paper, chosen here:
- Item correctness is the share of reviewed items whose majority label is 'correct' (the issue's reading of "majority
  decides"); a tie has no majority and counts as incorrect. Unanimity is counted over items with exactly three
  raters (App. A.5: "all three reviewers assign the same label").
- A round whose error share (1 - item correctness) exceeds `Budgets.error_threshold` excludes the package (App. E.1:
  "packages with high ... artifact error rates are excluded"; the paper gives no number, 50% here). Otherwise each
  incorrect item goes back to the stage that made it (App. E.4: "Fact errors return to evidence acquisition, while
  criterion errors return to criterion generation or rubric assembly"), which runs again with the model (`_repair`).
  Without a model (no endpoint and no authoring script) the repair removes the item (a fact takes the criteria bound
  to it along), recomputes verification and difficulty, and gives a direction left empty an N/A reason that names
  the review; the round's record says so.
- R_max (hyperparameters `max_repair_rounds`) counts validation rounds, numbered from 1 (Sec. 3.2: "After at most
  three rounds, ARC freezes"): rounds 1 .. R_max - 1 may repair, and a package still holding incorrect items in
  round R_max is excluded for persistent errors (no later round would check its repair). A package whose round finds
  no incorrect item is frozen (`snapshot freeze`: static checks clean and every warning reviewed) unless S5's
  behavioural calibration failed (`_calibration`).
- A decided round (`authoring/s6/round-N/record.json`, with the labels it was decided on) is not decided again: the
  labels file grows by a round at a time, and changing a decided round's labels is refused.
"""

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from omnidr.benchmark import (
    MANIFEST_FILE,
    FactLibrary,
    RubricTree,
    atom_facts,
    derive_difficulty,
    derive_verifications,
    freeze_snapshot,
    validate_snapshot,
)
from omnidr.errors import UserError

from ._agents import ModelEndpoint
from ._calibration import STEP, calibration_row
from ._models import Attrition, AuthoringReport, ReviewLabel, ReviewRound
from ._package import Package, dump, write_library, write_rubric
from ._repair import RepairRound, repair_with_model

log = logging.getLogger(__name__)


def read_review_labels(path: Path) -> list[ReviewLabel]:
    if not path.is_file():
        raise UserError(f"{path}: no such labels file")
    out = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(ReviewLabel.model_validate(json.loads(line)))
        except ValueError as exc:
            raise UserError(f"{path} line {n}: not a review label ({str(exc).splitlines()[0]}); each line is "
                            '{"round": N, "rater": NAME, "item": FACT_OR_ATOM_ID, "label": "correct"|"incorrect"}') from None
    return out


def review_round(labels: list[ReviewLabel], facts: set[str], criteria: set[str], round_no: int) -> ReviewRound:
    """The round's item correctness (by majority) and three-rater unanimity."""
    votes: dict[str, dict[str, str]] = defaultdict(dict)
    for lab in labels:
        if lab.round == round_no:
            if lab.item not in facts and lab.item not in criteria:
                raise UserError(f"review round {round_no}: item {lab.item!r} is neither a fact nor a criterion of the "
                                "package (as it stood in that round)")
            votes[lab.item][lab.rater] = lab.label  # a rater's later label of an item replaces the earlier
    correct, ties, wrong = 0, [], []
    three = unanimous = 0
    for item, by_rater in votes.items():
        count = Counter(by_rater.values())
        if count["correct"] > count["incorrect"]:
            correct += 1
        else:
            wrong.append(item)
            if count["correct"] == count["incorrect"]:
                ties.append(item)
        if len(by_rater) == 3:
            three += 1
            unanimous += len(count) == 1
    items = len(votes)
    return ReviewRound(round=round_no, items=items, judgments=sum(len(v) for v in votes.values()), correct_items=correct,
                       item_correctness=correct / items if items else 0.0, three_rater_items=three,
                       unanimous_items=unanimous, unanimity=unanimous / three if three else None,
                       incorrect_facts=sorted(i for i in wrong if i in facts),
                       incorrect_criteria=sorted(i for i in wrong if i in criteria), ties=sorted(ties))


def repair(library: FactLibrary, rubric: RubricTree, facts: list[str], criteria: list[str], video_url: str,
           round_no: int) -> tuple[FactLibrary, RubricTree, list[dict]]:
    """Remove what review found incorrect, recompute verification and difficulty, and name each finding's stage."""
    gone = set(facts)
    routed = [{"round": round_no, "item": f, "kind": "fact", "stage": "S1"} for f in facts]
    kept = []
    for rec in library.facts:
        if rec.id in gone:
            continue
        kept.append(rec.model_copy(update={"relations": [r for r in rec.relations if r.target not in gone],
                                           "conflicts_with": [c for c in rec.conflicts_with if c not in gone]}))
    library = FactLibrary(task_id=library.task_id, facts=kept)
    states = derive_verifications(library, video_url)
    library = FactLibrary(task_id=library.task_id,
                          facts=[r.model_copy(update={"verification": states[r.id].state}) for r in library.facts])
    origins = {r.id: r.origin for r in library.facts}
    verif = {r.id: r.verification for r in library.facts}
    atoms = []
    for a in rubric.atoms:
        if a.id in criteria:
            routed.append({"round": round_no, "item": a.id, "kind": "criterion", "stage": "S2"})
        elif gone & set(atom_facts(a)):
            routed.append({"round": round_no, "item": a.id, "kind": "criterion", "stage": "S1",
                           "why": f"bound to removed fact(s) {', '.join(sorted(gone & set(atom_facts(a))))}"})
        else:
            derived = derive_difficulty(a, origins, verif)
            atoms.append(a.model_copy(update={"difficulty": derived[0]}) if derived else a)
    na = dict(rubric.na_reasons)
    before = {a.direction for a in rubric.atoms}
    after = {a.direction for a in atoms}
    for d in sorted(before - after):
        lost = [str(r["item"]) for r in routed if r["kind"] == "criterion" and
                any(a.id == r["item"] and a.direction == d for a in rubric.atoms)]
        na[d] = (f"Review round {round_no} of task {rubric.task_id} found its criteria ({', '.join(lost)}) incorrect "
                 "and routed them back for regeneration; none is retained.")
    return library, RubricTree(task_id=rubric.task_id, atoms=atoms, na_reasons=na), routed


def _notes(labels: list[ReviewLabel], round_no: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for lab in labels:
        if lab.round == round_no and lab.note:
            out[lab.item].append(lab.note)
    return out


def review_package(pkg: Package, labels_file: Path, attrition: list[Attrition] | None = None,
                   endpoint: ModelEndpoint | None = None, script: dict | None = None,
                   on_note: Callable[[str], None] = log.info) -> AuthoringReport:
    """S5 human review and S6 over every round of the labels file, then the package's fate.

    A round already decided (`authoring/s6/round-N/record.json`) is not reviewed or repaired again: a labels file
    that grows by a round each time resumes where the last call stopped. With a model (`endpoint` with a base URL,
    or the scripted model with `script`), S6 reruns the stages that made each finding (`_repair`); without one it
    removes what review found incorrect and says so."""
    draft = pkg.draft()
    labels = read_review_labels(labels_file)
    rounds = sorted({lab.round for lab in labels})
    r_max = pkg.hyperparameters().max_repair_rounds
    if rounds and rounds[-1] > max(r_max, 1):
        raise UserError(f"{labels_file}: labels for round {rounds[-1]}, but R_max is {r_max} (hyperparameters.json "
                        "max_repair_rounds): a package is frozen or excluded by then")
    folder = pkg.task_dir(draft)
    library = FactLibrary.model_validate_json((folder / "facts.json").read_text("utf-8"))
    rubric = RubricTree.model_validate_json((folder / "rubric.json").read_text("utf-8"))
    video_url = pkg.task(draft).video.url
    with_model = endpoint is not None and (endpoint.base_url is not None or script is not None)
    trace = list(attrition or [])
    reviews: list[ReviewRound] = []
    routed: list[dict] = []
    status, note = "assembled", ""
    for r in rounds:
        record_file = pkg.stage("s6") / f"round-{r}" / "record.json"
        given = sorted(lab.model_dump_json() for lab in labels if lab.round == r)
        if record_file.is_file():
            done = json.loads(record_file.read_text("utf-8"))
            if done.get("labels") != given:
                raise UserError(f"{labels_file}: the labels of round {r} differ from the ones that round was decided "
                                f"on ({record_file}); keep them, or remove that record to review the round again")
            reviews.append(ReviewRound.model_validate(done["review"]))
            trace.append(Attrition.model_validate(done["attrition"]))
            routed += done["routed"]
            status, note = done["status"], done["note"]
            on_note(f"S5/S6 round {r}: decided before ({done['attrition']['decision']}); reused")
            if status != "assembled":
                break
            continue
        rr = review_round(labels, {f.id for f in library.facts}, {a.id for a in rubric.atoms}, r)
        reviews.append(rr)
        wrong = len(rr.incorrect_facts) + len(rr.incorrect_criteria)
        error = 1 - rr.item_correctness
        step = f"S5/S6 round {r}"
        details: dict = {}
        found: list[dict] = []
        if error > draft.budgets.error_threshold:
            status, note = "excluded", (f"round {r}: {wrong} of {rr.items} reviewed items incorrect ({error:.1%} > "
                                        f"threshold {draft.budgets.error_threshold:.0%}): pervasive errors")
            row = Attrition(step=step, candidates=rr.items, accepted=rr.correct_items, excluded=rr.items,
                            decision="excluded")
        elif not wrong:
            status, note = "frozen", ""
            row = Attrition(step=step, candidates=rr.items, accepted=rr.items, decision="accepted")
        elif r >= r_max:
            status, note = "excluded", (f"incorrect items remained in round {r} = R_max ({r_max}): persistent "
                                        "errors (no later round would check a repair)")
            row = Attrition(step=step, candidates=rr.items, accepted=rr.correct_items, excluded=rr.items,
                            decision="excluded")
        else:
            if with_model:
                assert endpoint is not None
                res = repair_with_model(RepairRound(pkg, r, _notes(labels, r), endpoint, script, on_note),
                                        library, rubric, rr.incorrect_facts, rr.incorrect_criteria)
                library, rubric, found = res.library, res.rubric, res.routed
                repaired, excluded = res.repaired, res.excluded
                details = {"repair": "model", "sessions": res.sessions, "routes": res.routes,
                           "removed": [x.model_dump() for x in res.removed], "errors": res.errors,
                           "warnings": res.warnings}
            else:
                library, rubric, found = repair(library, rubric, rr.incorrect_facts, rr.incorrect_criteria,
                                                video_url, r)
                repaired, excluded = 0, wrong
                details = {"repair": "removal: no model was given (--model-base-url, or --script for the scripted "
                                     "model), so what review found incorrect is removed without replacement"}
                write_library(pkg, draft, library)
                write_rubric(pkg, draft, rubric)
            status, note = "assembled", f"repaired in round {r}; the package awaits review round {r + 1}"
            row = Attrition(step=step, candidates=rr.items, accepted=rr.correct_items, repaired=repaired,
                            excluded=excluded, decision="repaired")
        routed += found
        trace.append(row)
        dump(record_file, {"stage": "S6", "round": r, "labels": given, "review": rr.model_dump(),
                           "attrition": row.model_dump(), "routed": found, "status": status, "note": note, **details})
        if status != "assembled":
            break
    report = AuthoringReport(task_id=draft.id, status=status, attrition=trace, reviews=reviews,
                             routed=routed, note=note)
    return finish(pkg, report)


def finish(pkg: Package, report: AuthoringReport) -> AuthoringReport:
    """Write the report; freeze a package review accepted (refused, it stays 'assembled' or becomes 'invalid')."""
    stage = pkg.stage("s6")
    row, problem = calibration_row(pkg)
    if row is not None:  # S5's behavioural calibration, after the construction rows
        trace = [a for a in report.attrition if a.step != STEP]
        at = next((i for i, a in enumerate(trace) if a.step.startswith("S5/S6")), len(trace))
        report = report.model_copy(update={"attrition": [*trace[:at], row, *trace[at:]]})
        if problem is not None and report.status in ("frozen", "assembled"):
            report = report.model_copy(update={"status": "excluded", "note": f"S5 behavioural calibration fails "
                                               f"(every retained task satisfies it, App. E.4): {problem}"})
    if report.status == "frozen":
        check = validate_snapshot(pkg.root)
        if check.errors or check.unreviewed:
            problems = [f"{p.file}: {p.path}: {p.message}" for p in (check.errors or check.unreviewed)]
            report = report.model_copy(update={
                "status": "invalid" if check.errors else "assembled",
                "note": "not frozen: " + "; ".join(problems[:5])})
    dump(stage / "record.json", {"stage": "S6", "status": report.status, "routed": report.routed, "note": report.note})
    dump(pkg.report_file, report)
    if report.status != "frozen":  # a package frozen before this review is no longer what its manifest vouches for
        (pkg.root / MANIFEST_FILE).unlink(missing_ok=True)
    if report.status == "frozen":
        manifest, _ = freeze_snapshot(pkg.root)
        assert manifest is not None  # validated just above, nothing changed since but the two records
    return report
