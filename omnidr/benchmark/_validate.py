"""Static checks of a snapshot (paper App. E.4): errors block release, warnings need review."""

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from sandbox.models import CorpusPage

from ._calibration import CALIBRATION_FILE, calibration_problem
from ._contract import data_schema
from ._evidence import derive_difficulty, derive_verifications, registrable_domain
from ._facts import EvidenceRecord, EvidenceSource, Origin, Verification
from ._hyperparameters import Hyperparameters, ReferenceBudgets
from ._kinds import TaskFormat
from ._mcq import VIDEOS_FILE
from ._rubric import (
    Atom,
    AtomEvaluator,
    Difficulty,
    Dimension,
    Direction,
    EvaluatorKind,
    GateLogic,
    ProbeSpec,
    direction_inventory,
    probe_catalog,
)
from ._snapshot import Problem, Snapshot, TaskBundle
from ._task import Language
from ._taxonomy import taxonomy

# Words that make a criterion a matter of taste rather than a checkable fact.
SUBJECTIVE_EN = re.compile(
    r"\b(good|great|nice|well|clear(ly)?|appropriate(ly)?|comprehensive(ly)?|beautiful|easy|engaging|"
    r"high[- ]quality|adequate(ly)?|sufficient(ly)?|reasonable|interesting|compelling|impressive)\b",
    re.IGNORECASE,
)
SUBJECTIVE_ZH = re.compile(r"(很好|良好|清晰|恰当|适当|全面|美观|容易|有趣|充分|合理|优秀|出色)")
CJK = re.compile(r"[\u4e00-\u9fff]")
JSON_TYPES = {"number": (int, float), "integer": (int,), "string": (str,), "boolean": (bool,)}
MAX_DIFFICULTY_SHARE = 0.7
MAX_DOMAIN_SHARE = 0.5


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _is_cjk_text(text: str) -> bool:
    """True when CJK characters make up a visible share of the letters in `text`."""
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(1 for c in letters if CJK.match(c)) / len(letters) >= 0.3


def subjective_wording(text: str, zh: bool) -> str | None:
    """The word that makes `text` a matter of taste (App. E.4's subjective-wording check), None without one."""
    found = (SUBJECTIVE_ZH if zh else SUBJECTIVE_EN).search(text)
    return found.group(0) if found else None


def _normalize(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


def validate(snap: Snapshot, check_videos: bool = True) -> list[Problem]:
    """Run every static check; returns load problems followed by check findings."""
    out = list(snap.problems)
    if snap.info is None:
        return out
    _FORMAT_CHECKS[snap.kind](snap, out, check_videos)
    return out


def _check_report_snapshot(snap: Snapshot, out: list[Problem], check_videos: bool) -> None:
    """A report snapshot: its inventory and probe catalog versions, contract, corpus, example reports, tasks and
    calibration."""
    info = snap.info
    assert info is not None
    inventory = direction_inventory()
    if info.inventory_version != inventory.version:
        out.append(Problem("error", "snapshot.json", "inventory_version",
                           f"snapshot uses '{info.inventory_version}' but this omnidr ships '{inventory.version}'"))
    if info.probes_version != probe_catalog().version:
        out.append(Problem("error", "snapshot.json", "probes_version",
                           f"snapshot uses '{info.probes_version}' but this omnidr ships '{probe_catalog().version}'"))
    _check_contract(snap, out)
    _check_corpus(snap, out)
    for label, folder in info.reports.items():
        if not (snap.root / folder).is_dir():
            out.append(Problem("error", "snapshot.json", f"reports.{label}", f"report folder {folder}/ is missing"))
    for task_id, bundle in snap.tasks.items():
        _check_task(snap, task_id, bundle, out, check_videos)
    _check_calibration(snap, out)


def _check_short_answer_snapshot(snap: Snapshot, out: list[Problem], check_videos: bool) -> None:
    _check_corpus(snap, out)
    _check_short_answers(snap, out, check_videos)


def _check_calibration(snap: Snapshot, out: list[Problem]) -> None:
    """R1 < R2 < R3 and R3 - R1 > delta_cal per task (App. E.4); a failing task is a warning, so a
    recorded review decision can keep it, as for every warning."""
    if snap.calibration is None:
        return
    gap = (snap.hyperparameters or Hyperparameters()).calibration_gap
    for task_id, scores in snap.calibration.tasks.items():
        if task_id not in snap.tasks:
            out.append(Problem("error", CALIBRATION_FILE, f"tasks.{task_id}", f"'{task_id}' is not a task of the snapshot"))
        elif (problem := calibration_problem(scores, gap)) is not None:
            out.append(Problem("warning", CALIBRATION_FILE, f"tasks.{task_id}", f"calibration fails: {problem}"))
    for task_id in snap.tasks:
        if task_id not in snap.calibration.tasks:
            out.append(Problem("warning", CALIBRATION_FILE, "tasks", f"task '{task_id}' has no calibration record"))


def _check_contract(snap: Snapshot, out: list[Problem]) -> None:
    if snap.contract is None or snap.contract_file is None:
        return
    folder = (snap.root / snap.contract_file).parent
    if not (folder / snap.contract.template).is_file():
        out.append(Problem("error", snap.contract_file, "template", f"template '{snap.contract.template}' is missing"))
    schema_file = folder / "data.schema.json"
    rel = snap.rel(schema_file)
    if not schema_file.is_file():
        out.append(Problem("error", rel, "", "window.DATA schema is missing; run `omnidr snapshot schema PATH`"))
    else:
        try:
            stale = json.loads(schema_file.read_text("utf-8")) != data_schema()
        except json.JSONDecodeError:
            stale = True
        if stale:
            out.append(Problem("error", rel, "", "differs from the ReportData model; run `omnidr snapshot schema PATH`"))


def _check_corpus(snap: Snapshot, out: list[Problem]) -> None:
    if snap.corpus is None:
        return
    seen: set[str] = set()
    for i, page in enumerate(snap.corpus.pages):
        if page.url in seen:
            out.append(Problem("error", "web/corpus.json", f"pages[{i}].url", f"duplicate URL {page.url}"))
        seen.add(page.url)
        if not (snap.root / "web" / page.path).is_file():
            out.append(Problem("error", "web/corpus.json", f"pages[{i}].path", f"file web/{page.path} is missing"))


# Several answers offered as one: "A or B", "A/B", "either ...": the reference must be one answer (paper 002,
# Sec. 2: every task has a unique, verifiable answer).
ALTERNATIVES = re.compile(r"\b(or|either)\b|\s/\s|;", re.IGNORECASE)


def _check_short_answers(snap: Snapshot, out: list[Problem], check_videos: bool) -> None:
    """A short-answer snapshot: one answer per task, stated once; no question asked twice; the video present."""
    questions: dict[str, str] = {}
    for task_id, b in snap.tasks.items():
        q = b.question
        if q is None:
            continue
        tf = f"tasks/{task_id}/task.json"
        if ALTERNATIVES.search(q.answer):
            out.append(Problem("error", tf, "answer", "offers alternatives ('or', 'either', '/', ';'); a reference "
                               "answer is one answer"))
        key = _normalize(q.question)
        if key in questions:
            out.append(Problem("error", tf, "question", f"the same question as task '{questions[key]}'"))
        questions.setdefault(key, task_id)
        if check_videos:
            _check_video(snap, b, tf, q.video, out)


def _missing_media_fix(snap: Snapshot) -> str:
    """How to get a snapshot's missing media back: a bundled demo `snapshots/<name>/` is regenerated by its
    sibling `snapshots/make_<name>_media.py`; another snapshot fetches its videos."""
    root = snap.root.resolve()
    maker = root.parent / f"make_{root.name.replace('-', '_')}_media.py"
    return (f"the bundled demos' videos are synthetic: regenerate them with `python3 {maker}`" if maker.is_file()
            else f"run `omnidr snapshot fetch-videos {snap.root}`")


def _check_mcq(snap: Snapshot, out: list[Problem], check_videos: bool) -> None:
    """A multiple-choice snapshot (paper 004): every video present with its checksum, and its subtitles; each
    question names a listed video, its certificate window lies inside that video (App. E.1: the window is a
    stretch of the video), and no video is asked the same question twice. Four distinct options and an answer
    among A-D are the model's own checks (`McqTask`)."""
    if check_videos:
        for i, video in enumerate(snap.videos.values()):
            at = f"videos[{i}]"
            _check_file(snap.root / video.file, video.sha256, VIDEOS_FILE, at,
                        f"video {video.file} is missing; {_missing_media_fix(snap)}", out)
            if video.subtitles is not None:
                _check_file(snap.root / video.subtitles.file, video.subtitles.sha256, VIDEOS_FILE, f"{at}.subtitles",
                            f"subtitles {video.subtitles.file} are missing; {_missing_media_fix(snap)}", out)
    asked: dict[tuple[str, str], str] = {}
    for task_id, b in snap.tasks.items():
        q = b.mcq
        if q is None:
            continue
        tf = f"tasks/{task_id}/task.json"
        known = snap.videos.get(q.video)
        if known is None:
            if snap.videos:  # without videos.json its own load error says it all
                out.append(Problem("error", tf, "video", f"unknown video '{q.video}': not in {VIDEOS_FILE} "
                                   f"({', '.join(sorted(snap.videos))})"))
        elif q.ccl.end_s > known.duration_s:
            out.append(Problem("error", tf, "ccl.end_s", f"{q.ccl.end_s:g} s is past the end of video '{known.id}' "
                               f"({known.duration_s:g} s)"))
        key = (q.video, _normalize(q.question))
        if key in asked:
            out.append(Problem("error", tf, "question", f"the same question on video '{q.video}' as task "
                               f"'{asked[key]}'"))
        asked.setdefault(key, task_id)


def _check_video(snap: Snapshot, b: TaskBundle, tf: str, video_ref, out: list[Problem]) -> None:
    base = snap.rel(b.folder)
    _check_file(b.folder / video_ref.file, video_ref.sha256, tf, "video",
                f"video {base}/{video_ref.file} is missing; {_missing_media_fix(snap)}", out)
    for i, track in enumerate(video_ref.captions):
        _check_file(b.folder / track.file, track.sha256, tf, f"video.captions[{i}]", f"captions {base}/{track.file} "
                    f"are missing; run `omnidr snapshot fetch-videos {snap.root}`", out)


def _check_file(path: Path, sha256: str, file: str, at: str, missing: str, out: list[Problem]) -> None:
    """A media file named at field `at` of `file`: present (else `missing`) and with its recorded sha256."""
    if not path.is_file():
        out.append(Problem("error", file, f"{at}.file", missing))
    elif (actual := sha256_file(path)) != sha256:
        out.append(Problem("error", file, f"{at}.sha256", f"checksum mismatch: file has {actual}"))


def _check_task(snap: Snapshot, task_id: str, b: TaskBundle, out: list[Problem], check_videos: bool) -> None:
    base = f"tasks/{task_id}"
    task, rubric = b.task, b.rubric
    if task is not None:
        tf = f"{base}/task.json"
        if task.id != task_id:
            out.append(Problem("error", tf, "id", f"id '{task.id}' differs from its folder name '{task_id}'"))
        sub = taxonomy().subcategory(task.subcategory)
        if sub is None:
            out.append(Problem("error", tf, "subcategory", f"unknown subcategory '{task.subcategory}'"))
        elif sub.family is not task.family:
            out.append(Problem("error", tf, "subcategory",
                               f"subcategory '{sub.id}' belongs to family '{sub.family.value}', not '{task.family.value}'"))
        if not (snap.root / task.contract).is_file():
            out.append(Problem("error", tf, "contract", f"contract file '{task.contract}' is missing"))
        if (task.language is Language.zh) != _is_cjk_text(task.query):
            out.append(Problem("error", tf, "query", f"query language does not match task language '{task.language.value}'"))
        if check_videos:
            _check_video(snap, b, tf, task.video, out)
    states = _check_facts(snap, task_id, b, out)
    if rubric is not None:
        _check_rubric(task_id, b, states, out)


def _check_facts(snap: Snapshot, task_id: str, b: TaskBundle, out: list[Problem]) -> dict[str, Verification]:
    """The fact library's checks; returns each fact's verification state as its evidence decides it."""
    facts = b.facts
    if facts is None:
        return {}
    ff = f"tasks/{task_id}/facts.json"
    if facts.task_id != task_id:
        out.append(Problem("error", ff, "task_id", f"'{facts.task_id}' differs from task '{task_id}'"))
    ids: dict[str, int] = {}
    for i, rec in enumerate(facts.facts):
        if rec.id in ids:
            out.append(Problem("error", ff, f"facts[{i}].id", f"duplicate fact id '{rec.id}' (first at facts[{ids[rec.id]}])"))
        else:
            ids[rec.id] = i
    corpus = {p.url: p for p in snap.corpus.pages} if snap.corpus else {}
    domains: Counter[str] = Counter()
    for i, rec in enumerate(facts.facts):
        _check_fact(b, ff, f"facts[{i}]", rec, ids, out)
        for j, src in enumerate(rec.sources):
            domains[registrable_domain(src.url)] += 1
            _check_fact_source(snap, corpus, ff, f"facts[{i}].sources[{j}]", src, out)
    total = sum(domains.values())
    if total >= 4:
        domain, count = domains.most_common(1)[0]
        if count / total > MAX_DOMAIN_SHARE:
            out.append(Problem("warning", ff, "facts", f"source concentration: {count} of {total} sources come from {domain}"))
    if facts.facts and not any(r.origin is Origin.web for r in facts.facts):
        out.append(Problem("warning", ff, "facts", "no external (web) fact: the task does not need research"))
    derived = derive_verifications(facts, b.task.video.url if b.task else "")
    for i, rec in enumerate(facts.facts):
        found = derived[rec.id]
        if found.state is not rec.verification and ids[rec.id] == i:
            out.append(Problem("warning", ff, f"facts[{i}].verification", (
                f"declared {rec.verification.value}, but the evidence makes it {found.state.value}: "
                f"{found.why} (App. E.2)")))
    return {fid: d.state for fid, d in derived.items()}


def _check_fact(b: TaskBundle, ff: str, at: str, rec: EvidenceRecord, ids: dict[str, int], out: list[Problem]) -> None:
    """A fact's links name known facts, its video moment lies within the video, its claim is in the task's language."""
    for j, rel in enumerate(rec.relations):
        if rel.target not in ids:
            out.append(Problem("error", ff, f"{at}.relations[{j}].target", f"unknown fact id '{rel.target}'"))
    for j, other in enumerate(rec.conflicts_with):
        if other not in ids:
            out.append(Problem("error", ff, f"{at}.conflicts_with[{j}]", f"unknown fact id '{other}'"))
    if b.task is None:
        return
    duration = b.task.video.duration_s
    if rec.video_ref and duration is not None and rec.video_ref.end_s > duration + 0.5:
        out.append(Problem("error", ff, f"{at}.video_ref.end_s",
                           f"{rec.video_ref.end_s} s is past the video's end ({duration} s)"))
    if (b.task.language is Language.zh) != _is_cjk_text(rec.claim):
        out.append(Problem("warning", ff, f"{at}.claim", "claim language does not match task language"))


def _check_fact_source(snap: Snapshot, corpus: dict[str, CorpusPage], ff: str, at: str, src: EvidenceSource,
                       out: list[Problem]) -> None:
    """A source bundled in the corpus names its corpus entry, and its quote is in the bundled page."""
    if src.corpus_path is None:
        return
    page = corpus.get(src.url)
    if page is None:
        out.append(Problem("error", ff, f"{at}.url", f"{src.url} is not in web/corpus.json"))
        return
    path = snap.root / "web" / src.corpus_path
    if src.corpus_path != page.path or not path.is_file():
        out.append(Problem("error", ff, f"{at}.corpus_path",
                           f"does not match the corpus entry for {src.url} ({page.path})"))
    elif src.quote and path.suffix in (".html", ".htm", ".txt") and src.quote not in path.read_text("utf-8", "replace"):
        out.append(Problem("warning", ff, f"{at}.quote", "quote not found verbatim in the bundled page"))


@dataclass(frozen=True)
class _RubricScope:
    """What a rubric's atoms are checked against: the direction inventory, the probe catalog and the task's facts."""

    rf: str
    """The rubric's path, as problems name it."""
    directions: dict[str, Direction]
    probes: dict[str, ProbeSpec]
    states: dict[str, Verification]
    """Each fact's verification state, as its evidence decides it."""
    origin_of: dict[str, Origin]
    has_facts: bool
    has_task: bool
    zh: bool


def _check_rubric(task_id: str, b: TaskBundle, states: dict[str, Verification], out: list[Problem]) -> None:
    rubric = b.rubric
    assert rubric is not None
    scope = _RubricScope(
        rf=f"tasks/{task_id}/rubric.json", directions=direction_inventory().by_id(), probes=probe_catalog().by_name(),
        states=states, origin_of={f.id: f.origin for f in b.facts.facts} if b.facts is not None else {},
        has_facts=b.facts is not None, has_task=b.task is not None,
        zh=b.task is not None and b.task.language is Language.zh)
    if rubric.task_id != task_id:
        out.append(Problem("error", scope.rf, "task_id", f"'{rubric.task_id}' differs from task '{task_id}'"))
    seen_ids: dict[str, int] = {}
    seen_text: dict[str, int] = {}
    for i, atom in enumerate(rubric.atoms):
        at = f"atoms[{i}]"
        _check_atom_unique(scope, at, i, atom, seen_ids, seen_text, out)
        direction = scope.directions.get(atom.direction)
        _check_atom_direction(scope, at, atom, direction, out)
        _check_atom_facts(scope, at, atom, direction, out)
        _check_atom_probe(scope, at, atom, direction, out)
        _check_atom_wording(scope, at, atom, out)
    per_direction = Counter(a.direction for a in rubric.atoms if a.direction in scope.directions)
    _check_na_reasons(scope, rubric.na_reasons, per_direction, out)
    _check_difficulty_balance(scope.rf, rubric.atoms, out)


def _check_atom_unique(scope: _RubricScope, at: str, i: int, atom: Atom, seen_ids: dict[str, int],
                       seen_text: dict[str, int], out: list[Problem]) -> None:
    """An atom's id and its criterion (normalized) appear once in the rubric."""
    if atom.id in seen_ids:
        out.append(Problem("error", scope.rf, f"{at}.id", f"duplicate atom id '{atom.id}' (first at atoms[{seen_ids[atom.id]}])"))
    else:
        seen_ids[atom.id] = i
    key = _normalize(atom.criterion)
    if key in seen_text:
        out.append(Problem("error", scope.rf, f"{at}.criterion", f"duplicate criterion (same as atoms[{seen_text[key]}])"))
    else:
        seen_text[key] = i


def _check_atom_direction(scope: _RubricScope, at: str, atom: Atom, direction: Direction | None, out: list[Problem]) -> None:
    """The atom's direction exists and takes atoms of its evaluator (and coverage checks only if content)."""
    rf = scope.rf
    if direction is None:
        out.append(Problem("error", rf, f"{at}.direction", f"unknown direction '{atom.direction}'"))
        return
    allowed = direction.evaluator is EvaluatorKind.both or direction.evaluator.value == atom.evaluator.value
    if not allowed:
        out.append(Problem("error", rf, f"{at}.evaluator",
                           f"direction {direction.id} takes {direction.evaluator.value} atoms, not {atom.evaluator.value}"))
    if atom.coverage and direction.dimension is not Dimension.C:
        out.append(Problem("error", rf, f"{at}.coverage", (
            f"only content atoms are coverage checks (App. A.4); {direction.id} is not a content (C) "
            "direction")))


def _check_atom_facts(scope: _RubricScope, at: str, atom: Atom, direction: Direction | None, out: list[Problem]) -> None:
    """The facts an atom names exist, its difficulty is what their evidence makes it, and its direction checks
    facts of that origin."""
    rf = scope.rf
    if atom.fact_id is not None and atom.fact_id not in scope.states:
        out.append(Problem("error", rf, f"{at}.fact_id", f"unknown fact id '{atom.fact_id}'"))
    for j, other in enumerate(atom.composes):
        if other not in scope.states:
            out.append(Problem("error", rf, f"{at}.composes[{j}]", f"unknown fact id '{other}'"))
    derived = derive_difficulty(atom, scope.origin_of, scope.states) if scope.has_facts else None
    if derived is not None and derived[0] is not atom.difficulty:
        out.append(Problem("warning", rf, f"{at}.difficulty", (
            f"declared {atom.difficulty.value}, but the evidence makes it {derived[0].value}: {derived[1]} "
            "(App. E.3)")))
    origin = scope.origin_of.get(atom.fact_id or "")
    fact = origin.value if origin is not None else None
    if direction is not None and direction.fact_origin and fact and fact != direction.fact_origin:
        out.append(Problem("warning", rf, f"{at}.fact_id", (
            f"direction boundary: {direction.id} checks {direction.fact_origin} facts, "
            f"but '{atom.fact_id}' is a {fact} fact")))
    if atom.evaluator is AtomEvaluator.J and atom.fact_id is None:
        out.append(Problem("error", rf, f"{at}.fact_id", "a J atom must name the fact it checks"))


def _check_atom_probe(scope: _RubricScope, at: str, atom: Atom, direction: Direction | None, out: list[Problem]) -> None:
    """An M atom's probe is in the catalog and gets the parameters it takes; without a fact it states its impact."""
    if atom.evaluator is not AtomEvaluator.M or atom.probe is None:
        return
    rf = scope.rf
    spec = scope.probes.get(atom.probe.name)
    if spec is None:
        out.append(Problem("error", rf, f"{at}.probe.name", f"unknown probe '{atom.probe.name}'"))
    else:
        if direction is not None and atom.direction not in spec.directions:
            out.append(Problem("warning", rf, f"{at}.probe.name", (
                f"direction boundary: probe '{spec.name}' measures {', '.join(spec.directions)}, "
                f"not {atom.direction}")))
        _check_probe_params(rf, at, spec, atom.probe.params, out)
    if atom.fact_id is None and not (atom.impact or "").strip():
        out.append(Problem("error", rf, f"{at}.impact", "an M atom without a fact must state its presentation impact"))


def _check_probe_params(rf: str, at: str, spec: ProbeSpec, params: dict, out: list[Problem]) -> None:
    for name in sorted(set(spec.params) - set(params) - set(spec.defaults)):
        out.append(Problem("error", rf, f"{at}.probe.params", f"missing parameter '{name}'"))
    kind = params.get("source_type")
    if (spec.name == "source_budget" and "min_count" not in params and isinstance(kind, str)
            and ReferenceBudgets().minimum(kind) is None):
        out.append(Problem("error", rf, f"{at}.probe.params", (
            f"the budgets set no minimum for {kind} sources: give min_count")))
    for name, value in sorted(params.items()):
        if name not in spec.params:
            out.append(Problem("error", rf, f"{at}.probe.params.{name}", f"probe '{spec.name}' takes no parameter '{name}'"))
        elif not isinstance(value, JSON_TYPES[spec.params[name]]) or isinstance(value, bool) != (spec.params[name] == "boolean"):
            out.append(Problem("error", rf, f"{at}.probe.params.{name}", f"must be a {spec.params[name]}"))


def _check_atom_wording(scope: _RubricScope, at: str, atom: Atom, out: list[Problem]) -> None:
    """A criterion is checkable (no words of taste) and in the task's language."""
    subjective = subjective_wording(atom.criterion, scope.zh)
    if subjective:
        out.append(Problem("warning", scope.rf, f"{at}.criterion", f"subjective wording '{subjective}'"))
    if scope.has_task and scope.zh != _is_cjk_text(atom.criterion):
        out.append(Problem("warning", scope.rf, f"{at}.criterion", "criterion language does not match task language"))


def _check_na_reasons(scope: _RubricScope, na_reasons: dict[str, str], per_direction: Counter[str],
                      out: list[Problem]) -> None:
    """Every direction has atoms or an N/A reason, never both; an 'any' gate with one atom is an 'all' gate."""
    rf, directions = scope.rf, scope.directions
    for direction_id in sorted(na_reasons):
        if direction_id not in directions:
            out.append(Problem("error", rf, f"na_reasons.{direction_id}", f"unknown direction '{direction_id}'"))
        elif per_direction[direction_id]:
            out.append(Problem("error", rf, f"na_reasons.{direction_id}", "direction has atoms and an N/A reason"))
        elif not na_reasons[direction_id].strip():
            out.append(Problem("error", rf, f"na_reasons.{direction_id}", "empty N/A reason"))
    for direction in directions.values():
        if not per_direction[direction.id] and direction.id not in na_reasons:
            out.append(Problem("error", rf, "atoms", f"direction {direction.id} ({direction.name}) has no atom and no N/A reason"))
        if direction.gate and direction.logic is GateLogic.any and per_direction[direction.id] == 1:
            out.append(Problem("warning", rf, "atoms",
                               f"gate {direction.id} uses logic 'any' with a single atom, which acts as 'all'"))


def _check_difficulty_balance(rf: str, atoms: list[Atom], out: list[Problem]) -> None:
    levels = Counter(a.difficulty for a in atoms)
    if atoms:
        missing = [d.value for d in Difficulty if not levels[d]]
        if missing:
            out.append(Problem("warning", rf, "atoms", f"difficulty balance: no atom at {', '.join(missing)}"))
        level, count = levels.most_common(1)[0]
        if count / len(atoms) > MAX_DIFFICULTY_SHARE:
            out.append(Problem("warning", rf, "atoms",
                               f"difficulty balance: {count} of {len(atoms)} atoms are {level.value}"))


_FORMAT_CHECKS = {TaskFormat.report: _check_report_snapshot, TaskFormat.short_answer: _check_short_answer_snapshot,
                  TaskFormat.mcq: _check_mcq}
"""The static checks of each task format's snapshots."""
