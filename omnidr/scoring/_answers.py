"""The accuracy leaderboard of answer tasks: short answers (task kind `short_answer`, OpenDS-World, paper 002,
Sec. 3 and App. D, E) and multiple-choice questions (task kind `mcq`, VideoOdyssey, paper 004).

Accuracy is the primary metric: the share of the task set answered correctly, a task without a judged answer
counting as incorrect, with a task-bootstrap percentile interval (the report leaderboard's bootstrap: one index
matrix shared by every system, so that paired differences resample the same tasks). Each system also gets its
accuracy by domain, evidence modality, format category, access type and anchor-video duration group (a task
counts in every group it carries, so a task with a PDF and a CSV source counts under both), its tokens and time
per task, how its research ended, and its tool use from the trajectories: the share of tool latency spent on
failed calls and the category-to-category transitions.

Multiple-choice boards break accuracy down by subset, task type, dimension, the video's domain, audio type and CCL
bin instead (`MCQ_BREAKDOWNS`), count the unparseable answers, carry the chance level (25%, paper 004 App. D.4)
and, per system, the leave-one-video-out accuracy (App. C.1, Table 11). Task types and domains are open labels
(the paper lists them only in figures), so their groups are the labels the task set carries, sorted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from statistics import mean, median
from typing import TYPE_CHECKING

from omnidr.benchmark import (
    CCL_BINS,
    CHANCE_ACCURACY,
    DURATION_BINS,
    DURATION_GROUPS,
    FORMAT_CATEGORIES,
    OTHER_DURATION,
    AccessType,
    AudioType,
    Domain,
    McqTask,
    McqVideo,
    Modality,
    QuestionDimension,
    ShortAnswerTask,
    Subset,
    certificate_bin,
    duration_bin,
    duration_group,
)
from sandbox.models import OPTION_LETTERS

from ._answer_models import (
    BREAKDOWNS,
    MCQ_BREAKDOWNS,
    OFFICIAL_DIMENSIONS,
    TOOL_CATEGORY_ORDER,
    UNRECORDED,
    AnswerLeaderboard,
    AnswerOutcome,
    AnswerProcess,
    AnswerSystem,
    AnswerSystemResult,
    GroupAccuracy,
    LeaveOneVideoOut,
    SubsetAccuracy,
    VideoHoldout,
)
from ._errors import ScoringInputError
from ._leaderboard import (
    CONFIDENCE,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    _pairs,
    bootstrap_counts,
    bootstrap_means,
    competition_ranks,
    distinct_labels,
    percentile_interval,
    rank_order,
)
from ._tables import PairedComparison

if TYPE_CHECKING:  # numpy is imported where it computes: most commands (and the evaluator's probe step) never do
    import numpy as np

CORRECT_POINTS = 100.0
"""What a correct answer counts for: accuracy is a mean of 100s and 0s, in percent."""

BUDGET_EXHAUSTED = "budget_exhausted"  # sandbox.models.TerminationReason

BREAKDOWN_GROUPS: dict[str, tuple[str, ...]] = {
    "domain": tuple(d.value for d in Domain),
    "modality": tuple(m.value for m in Modality),
    "format": FORMAT_CATEGORIES,
    "access_type": tuple(a.value for a in AccessType),
    "duration": tuple(label for label, _ in DURATION_GROUPS),
    "difficulty": ("low", "medium", "high"),
}
"""Every label of each breakdown, in the taxonomy's order."""

_LABELS: dict[str, Callable[[ShortAnswerTask], list[str]]] = {
    "domain": lambda t: [t.domain.value],
    "modality": lambda t: [m.value for m in t.modalities],
    "format": lambda t: t.format_categories,
    "access_type": lambda t: [a.value for a in t.access_types],
    "duration": lambda t: [duration_group(t.video.duration_s)],
    "difficulty": lambda t: [t.difficulty] if t.difficulty else [],
}
assert tuple(_LABELS) == BREAKDOWNS == tuple(BREAKDOWN_GROUPS)


def task_groups(task: ShortAnswerTask) -> dict[str, list[str]]:
    """The labels of one task per breakdown (a task has one domain and duration group, and one or more modalities,
    format categories and access types)."""
    return {name: labels(task) for name, labels in _LABELS.items()}


def mcq_task_groups(task: McqTask, video: McqVideo | None) -> dict[str, list[str]]:
    """The labels of one multiple-choice question per breakdown (`MCQ_BREAKDOWNS`): one each, except the audio type,
    which a V question has not, and the domain, which a question whose video is unknown has not."""
    return {"subset": [task.subset.value], "task_type": [task.task_type], "dimension": [task.dimension.value] if task.dimension is not None else [],
            "domain": [video.domain] if video is not None else [],
            "audio_type": [task.audio_type.value] if task.audio_type is not None else [],
            "duration": [duration_bin(video_minutes(video))] if video is not None else [], "ccl_bin": [task.ccl_bin]}


def video_minutes(video: McqVideo) -> float:
    """A video's length for the duration bins: the release's `duration_minutes` (what the authors' scorer bins),
    else the probed length."""
    return video.release.duration_minutes if video.release is not None else video.duration_s / 60.0


def mcq_breakdown_groups(labels: Mapping[str, dict[str, list[str]]]) -> dict[str, tuple[str, ...]]:
    """Every label of each multiple-choice breakdown: the closed ones in their model's order (CCL bins in
    `CCL_BINS` order), task types and domains as the tasks carry them, sorted."""
    def carried(name: str) -> tuple[str, ...]:
        return tuple(sorted({g for groups in labels.values() for g in groups[name]}))

    out = {"subset": tuple(s.value for s in Subset), "task_type": carried("task_type"),
           "dimension": tuple(d.value for d in QuestionDimension), "domain": carried("domain"),
           "audio_type": tuple(a.value for a in AudioType),
           "duration": (*(label for label, _, _ in DURATION_BINS), OTHER_DURATION),
           "ccl_bin": tuple(label for label, _ in CCL_BINS)}
    assert tuple(out) == MCQ_BREAKDOWNS
    return out


def leave_one_video_out(scores: np.ndarray, videos: Sequence[str]) -> LeaveOneVideoOut:
    """Accuracy of one system with each video's questions left out in turn (paper 004, App. C.1, Table 11), and the
    largest absolute change from its overall accuracy in percentage points. `scores`: the system's points per task
    (100 or 0), `videos`: each task's video id, in the same order."""
    import numpy as np

    overall = float(scores.mean()) if len(scores) else 0.0
    ids = np.array(videos, dtype=object)
    holdouts = []
    for video in sorted(set(videos)):
        rest = scores[ids != video]
        accuracy = float(rest.mean()) if len(rest) else None
        holdouts.append(VideoHoldout(video=video, questions=int((ids == video).sum()), accuracy=accuracy,
                                     change=accuracy - overall if accuracy is not None else None))
    known = [h for h in holdouts if h.change is not None]
    worst = max(known, key=lambda h: abs(h.change or 0.0), default=None)
    accuracies = [h.accuracy for h in known if h.accuracy is not None]
    return LeaveOneVideoOut(holdouts=holdouts, min_accuracy=min(accuracies, default=None),
                            max_accuracy=max(accuracies, default=None),
                            max_abs_change=abs(worst.change) if worst is not None and worst.change is not None else None,
                            max_change_video=worst.video if worst is not None else None)


def answer_task_set(systems: Sequence[AnswerSystem], task_ids: Sequence[str] | None = None,
                    order: Sequence[str] = ()) -> list[str]:
    """The given task ids, or every task any system has an outcome for (in `order`, then by id)."""
    if task_ids is not None:
        ids = list(task_ids)
        if len(set(ids)) != len(ids):
            raise ScoringInputError("the task set names a task twice")
        return ids
    found = {o.task_id for s in systems for o in s.outcomes}
    rank = {t: i for i, t in enumerate(order)}
    return sorted(found, key=lambda t: (rank.get(t, len(rank)), t))


def outcome_table(systems: Sequence[AnswerSystem], task_ids: Sequence[str]) -> list[list[AnswerOutcome | None]]:
    """table[s][t]: system s on task t, None when it has no outcome there; outcomes outside the set are ignored."""
    table = []
    for s in systems:
        by_task: dict[str, AnswerOutcome] = {}
        for o in s.outcomes:
            if o.task_id in by_task:
                raise ScoringInputError(f"system '{s.system.label}' has two outcomes for task '{o.task_id}'")
            by_task[o.task_id] = o
        table.append([by_task.get(t) for t in task_ids])
    return table


def accuracy_matrix(table: list[list[AnswerOutcome | None]]) -> np.ndarray:
    """(systems, tasks): CORRECT_POINTS for a correct answer, 0 otherwise."""
    import numpy as np

    return np.array([[CORRECT_POINTS if o is not None and o.correct else 0.0 for o in row] for row in table],
                    dtype=float).reshape(len(table), -1)


def _one_judge(table: list[list[AnswerOutcome | None]]) -> str | None:
    judges = sorted({o.judge for row in table for o in row if o is not None and o.judge})
    if len(judges) > 1:
        raise ScoringInputError(f"the answers were judged by {len(judges)} different judges ({', '.join(judges)}); "
                                "re-score every system with one judge before comparing them")
    return judges[0] if judges else None


def _groups(row: list[AnswerOutcome | None], task_ids: Sequence[str], labels: Mapping[str, dict[str, list[str]]],
            breakdowns: Mapping[str, tuple[str, ...]]) -> dict[str, list[GroupAccuracy]]:
    out = {}
    for name, groups in breakdowns.items():
        members: dict[str, list[bool]] = {g: [] for g in groups}
        for task, outcome in zip(task_ids, row, strict=True):
            for g in labels[task][name]:
                members.setdefault(g, []).append(outcome is not None and outcome.correct)
        out[name] = [GroupAccuracy(group=g, tasks=len(v), correct=sum(v),
                                   accuracy=CORRECT_POINTS * sum(v) / len(v) if v else None)
                     for g, v in members.items()]
    return out


def _process(row: list[AnswerOutcome | None]) -> AnswerProcess:
    present = [o for o in row if o is not None]
    tokens = [o.tokens for o in present if o.tokens is not None]
    times = [o.elapsed_s for o in present if o.elapsed_s is not None]
    ends: dict[str, int] = {}
    for o in row:
        key = (o.termination if o is not None else None) or UNRECORDED
        if key == BUDGET_EXHAUSTED and o is not None and o.limit:  # paper 002, Sec. 3.6: which limit it was
            key = f"{key} ({o.limit})"
        ends[key] = ends.get(key, 0) + 1
    uses = [o.tool_use for o in present if o.tool_use is not None]
    calls = sum(u.calls for u in uses)
    failed = sum(u.failed_calls for u in uses)
    latency = sum(u.latency_s for u in uses)
    timed = sum(u.timed_calls for u in uses)
    categories = {c: n for c in TOOL_CATEGORY_ORDER if (n := sum(u.categories.get(c, 0) for u in uses))}
    transitions: dict[str, int] = {}
    for u in uses:
        for pair, n in u.transitions.items():
            transitions[pair] = transitions.get(pair, 0) + n
    leaving: dict[str, int] = {}
    for pair, n in transitions.items():
        leaving[pair.split("->")[0]] = leaving.get(pair.split("->")[0], 0) + n
    order: dict[str, int] = {c: i for i, c in enumerate(TOOL_CATEGORY_ORDER)}
    ordered = sorted(transitions, key=lambda p: tuple(order.get(c, len(order)) for c in p.split("->")))
    return AnswerProcess(
        tasks_with_tokens=len(tokens), mean_tokens=mean(tokens) if tokens else None,
        median_tokens=float(median(tokens)) if tokens else None, tasks_timed=len(times),
        mean_elapsed_s=mean(times) if times else None, median_elapsed_s=float(median(times)) if times else None,
        terminations=dict(sorted(ends.items())),
        budget_exhausted_share=sum(n for k, n in ends.items() if k.startswith(BUDGET_EXHAUSTED)) / len(row) if row else 0.0,
        traces=len(uses), tool_calls=calls, failed_calls=failed, failed_call_share=failed / calls if calls else None,
        tool_latency_s=round(latency, 3),
        failed_latency_share=sum(u.failed_latency_s for u in uses) / latency if timed and latency > 0 else None,
        categories=categories, transitions={p: transitions[p] for p in ordered},
        transition_shares={p: transitions[p] / leaving[p.split("->")[0]] for p in ordered},
    )


def official_labels(task: McqTask, video: McqVideo) -> dict[str, list[str]]:
    """A question's labels as the VideoOdyssey authors' scorer prints them (`OFFICIAL_DIMENSIONS`): from the release
    entry where the snapshot was imported from one, else from our labels (domain, task type, audio type, probed
    length, certificate window)."""
    rq, rv = task.release, video.release
    minutes = duration_bin(video_minutes(video))
    return {
        "video_category": [(rv.video_category if rv is not None else video.domain) or "Unknown"],
        "question_type": (rq.question_type if rq is not None else [task.task_type]) or ["Unknown"],
        "audio_type": (rq.audio_type if rq is not None else [task.audio_type.value] if task.audio_type else [])
        or ["Unknown"],
        "duration": [minutes if minutes == OTHER_DURATION else f"{minutes} min"],
        "certificate_length": [(certificate_bin(rq.time_reference) if rq is not None else task.ccl_bin) + " min"],
    }


def _official_breakdowns(valid: Sequence[tuple[str, str]], labels: list[dict[str, list[str]]],
                         with_audio: bool) -> dict[str, list[GroupAccuracy]]:
    """The authors' scorer's per-label accuracy over the valid predictions: (reading, key) with each one's labels."""
    out: dict[str, list[GroupAccuracy]] = {}
    for name in OFFICIAL_DIMENSIONS:
        if name == "audio_type" and not with_audio:
            continue
        tally: dict[str, list[int]] = {}
        for (reading, key), groups in zip(valid, labels, strict=True):
            for label in groups[name]:
                tally.setdefault(label, []).append(int(reading == key))
        out[name] = [GroupAccuracy(group=label, tasks=len(hits), correct=sum(hits),
                                   accuracy=CORRECT_POINTS * sum(hits) / len(hits)) for label, hits in sorted(tally.items())]
    return out


def _subsets(scores: np.ndarray, table: list[list[AnswerOutcome | None]], ids: Sequence[str],
             questions: Mapping[str, McqTask], videos: Mapping[str, McqVideo], replicates: int, seed: int,
             confidence: float) -> list[list[SubsetAccuracy]]:
    """Per system, per subset present (V, then AV): our accuracy with its interval over the subset's questions, and
    the authors' scorer's accuracy from each outcome's official reading (not A-D: left out of the denominator)."""
    import numpy as np

    out: list[list[SubsetAccuracy]] = [[] for _ in table]
    for subset in Subset:
        idx = [k for k, t in enumerate(ids) if questions[t].subset is subset]
        if not idx:
            continue
        part = scores[:, idx]
        low, high = percentile_interval(bootstrap_means(part, bootstrap_counts(len(idx), replicates, seed)), confidence)
        labels = [official_labels(questions[ids[k]], videos[questions[ids[k]].video]) for k in idx]
        with_audio = any(q.audio_type is not None or (q.release is not None and q.release.audio_type)
                         for q in (questions[ids[k]] for k in idx))
        for i, row in enumerate(table):
            outcomes = [row[k] for k in idx]
            readings = [o.official if o is not None else "API_Error" for o in outcomes]
            known = all(r is not None for r in readings)
            kept = [(r, questions[ids[k]].answer, g) for r, k, g in zip(readings, idx, labels, strict=True)
                    if r in OPTION_LETTERS]  # the authors' scorer counts exactly these as valid
            valid = [(r, key) for r, key, _ in kept]
            right = sum(r == key for r, key in valid)
            out[i].append(SubsetAccuracy(
                subset=subset.value, questions=len(idx), correct=int(np.count_nonzero(part[i])),
                accuracy=float(part[i].mean()), accuracy_ci_low=float(low[i]), accuracy_ci_high=float(high[i]),
                unparseable=sum(1 for o in outcomes if o is not None and o.unparseable),
                official_valid=len(valid) if known else None, official_correct=right if known else None,
                official_invalid=len(idx) - len(valid) if known else None,
                official_accuracy=CORRECT_POINTS * right / len(valid) if known and valid else None,
                official_breakdowns=_official_breakdowns(valid, [g for _, _, g in kept], with_audio) if known else {}))
    return out


def build_answer_leaderboard(
    systems: Sequence[AnswerSystem],
    tasks: Sequence[ShortAnswerTask] | Sequence[McqTask],
    task_ids: Sequence[str] | None = None,
    *,
    videos: Mapping[str, McqVideo] | None = None,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
    with_comparisons: bool = False,
) -> AnswerLeaderboard:
    """Rank answer systems by accuracy over the task set, with breakdowns and process statistics.

    `tasks` are the snapshot's tasks (their labels), all short-answer or all multiple-choice; the kind decides the
    breakdowns. Multiple-choice tasks need `videos` (the snapshot's `videos.json`, for the domain and the
    leave-one-video-out accuracy); their board also carries the chance level and the unparseable answers.
    `task_ids` defaults to every task any system has an outcome
    for, in the snapshot's order. A system without an outcome for a task is incorrect there. A system with an
    outcome that is not final is provisional: listed after the ranked rows, unranked. With `with_comparisons`,
    every pair of systems is compared, A minus B with A the higher-ranked (App. F.2 of paper 000, as everywhere)."""
    if not systems:
        raise ScoringInputError("no system to rank; give at least one system")
    labels_of = [s.system.label for s in systems]
    distinct_labels(labels_of)
    by_id = {t.id: t for t in tasks}
    ids = answer_task_set(systems, task_ids, [t.id for t in tasks])
    unknown = [t for t in ids if t not in by_id]
    if unknown:
        raise ScoringInputError(f"task(s) {', '.join(unknown[:5])} are not in the snapshot's tasks; give the snapshot "
                                "the systems were run on")
    table = outcome_table(systems, ids)
    judge = _one_judge(table)
    scores = accuracy_matrix(table)
    counts = bootstrap_counts(len(ids), replicates, seed)
    low, high = percentile_interval(bootstrap_means(scores, counts), confidence)
    acc = scores.mean(axis=1)
    pending = [[t for t, o in zip(ids, row, strict=True) if o is not None and o.incomplete] for row in table]
    order = rank_order(labels_of, list(acc))
    ranked = [i for i in order if not pending[i]]
    order = ranked + [i for i in order if pending[i]]
    ranks = dict(zip(ranked, competition_ranks([float(acc[i]) for i in ranked]), strict=True))
    wanted = set(ids)
    questions: dict[str, McqTask] = {t.id: t for t in tasks if isinstance(t, McqTask) and t.id in wanted}
    short: dict[str, ShortAnswerTask] = {t.id: t for t in tasks if isinstance(t, ShortAnswerTask)}
    mcq = bool(tasks) and not short
    if mcq:
        unknown_video = sorted({q.video for q in questions.values()} - set(videos or {}))
        if unknown_video:
            raise ScoringInputError(f"video(s) {', '.join(unknown_video[:5])} of the questions are not in the "
                                    "videos given; give the snapshot's videos.json")
        labels = {t: mcq_task_groups(q, (videos or {})[q.video]) for t, q in questions.items()}
        breakdowns = mcq_breakdown_groups(labels)
        video_of = [questions[t].video for t in ids]
        subsets = _subsets(scores, table, ids, questions, videos or {}, replicates, seed, confidence)
    else:
        labels = {t: task_groups(short[t]) for t in ids}
        breakdowns = BREAKDOWN_GROUPS
    rows = []
    for i in order:
        row = table[i]
        rows.append(AnswerSystemResult(
            rank=ranks.get(i), system=systems[i].system, label=labels_of[i], tasks=len(ids),
            correct=sum(1 for o in row if o is not None and o.correct),
            answered=sum(1 for o in row if o is not None and o.answered), accuracy=float(acc[i]),
            accuracy_ci_low=float(low[i]), accuracy_ci_high=float(high[i]),
            breakdowns=_groups(row, ids, labels, breakdowns), process=_process(row), incomplete=pending[i],
            unparseable=sum(1 for o in row if o is not None and o.unparseable) if mcq else None,
            lovo=leave_one_video_out(scores[i], video_of) if mcq else None,
            subsets=subsets[i] if mcq else None,
        ))
    comparisons = (_pairs(labels_of, scores, counts, list(combinations(order, 2)), seed, confidence)
                   if with_comparisons else [])
    return AnswerLeaderboard(task_kind="mcq" if mcq else "short_answer", chance_accuracy=CHANCE_ACCURACY if mcq else None,
                             task_ids=ids, judge=judge, replicates=replicates, seed=seed, confidence=confidence,
                             rows=rows, comparisons=comparisons)


def compare_answer_systems(
    a: AnswerSystem,
    b: AnswerSystem,
    task_ids: Sequence[str] | None = None,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> PairedComparison:
    """The higher-ranked of A and B minus the other (App. F.2 of paper 000), in accuracy (percentage points) over the
    same tasks, with a paired task-bootstrap percentile interval and per-task wins (A right, B wrong), ties and
    losses. Tasks default to those either has answered."""
    labels = distinct_labels([a.system.label, b.system.label])
    ids = answer_task_set([a, b], task_ids)
    if not ids:
        raise ScoringInputError("the task set is empty; give at least one task")
    table = outcome_table([a, b], ids)
    _one_judge(table)
    scores = accuracy_matrix(table)
    return _pairs(labels, scores, bootstrap_counts(len(ids), replicates, seed), [(0, 1)], seed, confidence)[0]
