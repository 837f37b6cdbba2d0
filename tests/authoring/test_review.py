"""S5 human review of a package and S6's routing, on a package built from the demo task's library and rubric (real
ffprobe for S0; no sandbox): item correctness and unanimity by hand-checkable numbers."""

import json
import shutil
from pathlib import Path

import pytest
from testkit import DEMO, run_cli

from omnidr.authoring import Package, TaskRequest, init_package, review_package
from omnidr.benchmark import freeze_snapshot, verify_snapshot

pytestmark = pytest.mark.media
TASK = "pendant-lamp-safety"


def demo_package(pkg: Path) -> Path:
    """A package as S4 leaves it, made at `pkg`: S0 for the demo video, then the demo's library and rubric in place."""
    task = TaskRequest(request="Which of the video's steps can I rely on?", language="en", family="physical_procedure",
                       subcategory="home_repair_diy", query_form="user_demand", task_id=TASK,
                       video_url="https://www.youtube.com/watch?v=Pq7dLmpA3xK")
    init_package(DEMO / "tasks" / TASK / "video.mp4", task, pkg, DEMO)
    for name in ("facts.json", "rubric.json"):
        shutil.copy(DEMO / "tasks" / TASK / name, pkg / "tasks" / TASK / name)
    return pkg


@pytest.fixture(scope="module")
def assembled(tmp_path_factory) -> Path:
    return demo_package(tmp_path_factory.mktemp("review") / "pkg")


@pytest.fixture
def package(assembled, tmp_path) -> Package:
    shutil.copytree(assembled, tmp_path / "pkg")
    return Package(tmp_path / "pkg")


def _labels(path: Path, rows: list[tuple[int, str, str, str]]) -> Path:
    path.write_text("".join(json.dumps({"round": r, "rater": who, "item": item, "label": label}) + "\n"
                            for r, who, item, label in rows))
    return path


def _votes(round_no: int, item: str, labels: str) -> list[tuple[int, str, str, str]]:
    """Three raters' labels of one item: 'cci' is correct, correct, incorrect."""
    return [(round_no, f"rater{i}", item, "correct" if c == "c" else "incorrect") for i, c in enumerate(labels, 1)]


def test_two_rounds_repair_then_freeze(package, tmp_path):
    rows = (_votes(1, "V01", "ccc") + _votes(1, "V07", "cci") + _votes(1, "W03", "iic")
            + _votes(1, "C-FC-01", "ccc") + _votes(1, "C-FC-02", "iii")
            + _votes(2, "V01", "ccc") + _votes(2, "C-FC-01", "ccc") + _votes(2, "V07", "ccc"))
    report = review_package(package, _labels(tmp_path / "labels.jsonl", rows))
    first, second = report.reviews
    # round 1: 5 items, 15 labels; majority correct for V01, V07, C-FC-01: 3/5; all three agree on V01, C-FC-01,
    # C-FC-02: 3/5
    assert (first.items, first.judgments, first.correct_items, first.item_correctness) == (5, 15, 3, 0.6)
    assert (first.three_rater_items, first.unanimous_items, first.unanimity) == (5, 3, 0.6)
    assert first.incorrect_facts == ["W03"] and first.incorrect_criteria == ["C-FC-02"]
    assert (second.items, second.correct_items, second.item_correctness, second.unanimity) == (3, 3, 1.0, 1.0)
    # W03 went back to S1 and took the criterion bound to it; C-FC-02 went back to S2
    stages = {r["item"]: r["stage"] for r in report.routed}
    assert stages == {"W03": "S1", "C-FC-02": "S2", "C-CA-01": "S1"}
    assert report.status == "frozen" and [(a.step, a.decision) for a in report.attrition] == [
        ("S5/S6 round 1", "repaired"), ("S5/S6 round 2", "accepted")]
    facts = {f["id"]: f for f in json.loads((package.root / "tasks" / TASK / "facts.json").read_text())["facts"]}
    assert "W03" not in facts and not any(r["target"] == "W03" for f in facts.values() for r in f["relations"])
    atoms = {a["id"] for a in json.loads((package.root / "tasks" / TASK / "rubric.json").read_text())["atoms"]}
    assert "C-FC-02" not in atoms and "C-CA-01" not in atoms and "C-FC-01" in atoms
    _, diff = verify_snapshot(package.root)
    assert diff.clean


def test_a_repair_that_leaves_a_warning_is_not_frozen_without_a_review_decision(package, tmp_path):
    # W06 takes C-QR-01 (it composes W06) along, leaving gate C-QR's 'any' with one atom: a warning to decide on
    rows = _votes(1, "V01", "ccc") + _votes(1, "V02", "ccc") + _votes(1, "W06", "iic") + _votes(2, "V01", "ccc")
    report = review_package(package, _labels(tmp_path / "labels.jsonl", rows))
    assert report.status == "assembled" and "gate C-QR uses logic 'any' with a single atom" in report.note
    assert not (package.root / "MANIFEST.json").exists()


def test_a_package_over_the_error_threshold_is_excluded(package, tmp_path):
    freeze_snapshot(package.root)  # frozen on the static checks before anyone reviewed it
    assert (package.root / "MANIFEST.json").is_file()
    rows = (_votes(1, "V01", "iii") + _votes(1, "V07", "iic") + _votes(1, "W06", "cci")
            + _votes(1, "C-FC-01", "iic") + _votes(1, "C-FC-02", "ccc"))
    report = review_package(package, _labels(tmp_path / "labels.jsonl", rows))
    [review] = report.reviews
    assert (review.items, review.correct_items, review.item_correctness) == (5, 2, 0.4)
    assert (review.unanimous_items, review.unanimity) == (2, 0.4)
    assert report.status == "excluded" and "3 of 5 reviewed items incorrect (60.0% > threshold 50%)" in report.note
    assert [(a.step, a.candidates, a.accepted, a.excluded, a.decision) for a in report.attrition] == [
        ("S5/S6 round 1", 5, 2, 5, "excluded")]
    assert not (package.root / "MANIFEST.json").exists()
    saved = json.loads((package.root / "authoring" / "report.json").read_text())
    assert saved["status"] == "excluded"


def test_errors_left_after_r_max_rounds_exclude_the_package(package, tmp_path):
    rows = [row for r in (1, 2, 3) for row in _votes(r, "V01", "ccc") + _votes(r, f"C-FC-0{r + 2}", "iii")]
    report = review_package(package, _labels(tmp_path / "labels.jsonl", rows))
    assert report.status == "excluded" and "R_max (3)" in report.note
    assert [a.decision for a in report.attrition] == ["repaired", "repaired", "excluded"]


def test_a_bad_labels_file_is_refused_in_one_line(package, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"round": 1, "rater": "a", "item": "V01", "label": "maybe"}\n')
    done = run_cli("author", "review", package.root, bad)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "line 1: not a review label" in done.stderr
    unknown = _labels(tmp_path / "unknown.jsonl", _votes(1, "NOPE", "ccc"))
    done = run_cli("author", "review", package.root, unknown)
    assert done.returncode == 2 and "item 'NOPE' is neither a fact nor a criterion" in done.stderr


def test_init_refuses_bad_input_in_one_line(assembled, tmp_path):
    video = DEMO / "tasks" / TASK / "video.mp4"
    common = ["--like", DEMO, "--request", "Why?"]
    cases = [
        ([video, tmp_path / "a", "--subcategory", "no_such", *common], "unknown subcategory 'no_such'"),
        ([video, tmp_path / "b", "--subcategory", "home_repair_diy", "--family", "science_explainer", *common],
         "belongs to family 'physical_procedure'"),
        ([tmp_path / "none.mp4", tmp_path / "c", "--subcategory", "home_repair_diy", *common], "no such video file"),
        ([video, assembled, "--subcategory", "home_repair_diy", *common], "exists and is not empty"),
        ([DEMO / "snapshot.json", tmp_path / "d", "--subcategory", "home_repair_diy", *common], "ffprobe failed"),
    ]
    for args, message in cases:
        done = run_cli("author", "init", *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    done = run_cli("author", "video-map", tmp_path / "nothing")
    assert done.returncode == 2 and "not an authoring package" in done.stderr
    init = run_cli("author", "init", video, tmp_path / "ok", "--subcategory", "home_repair_diy", *common)
    assert init.returncode == 0 and "S0: package" in init.stdout
    draft = json.loads((tmp_path / "ok" / "authoring" / "task-draft.json").read_text())
    assert draft["family"] == "physical_procedure" and len(draft["routes"]) == 6
    task = json.loads((tmp_path / "ok" / "tasks" / "ok" / "task.json").read_text())
    assert task["video"]["duration_s"] == 36.0 and task["video"]["sha256"] == json.loads(
        (DEMO / "tasks" / TASK / "task.json").read_text())["video"]["sha256"]


def _calibration(pkg: Package, r1: float, r2: float, r3: float) -> None:
    (pkg.root / "calibration.json").write_text(json.dumps({
        "systems": {"R1": "reference-video-scripted", "R2": "reference-full-scripted",
                    "R3": "reference-full-brief-scripted"}, "judge": "scripted", "tasks": {TASK: {"R1": r1, "R2": r2, "R3": r3}}}))


def test_a_package_failing_behavioural_calibration_is_excluded(package, tmp_path):
    # S5's calibration (App. E.4): R3 - R1 = 48 - 30 = 18 points, not above delta_cal = 20 points
    _calibration(package, 30, 45, 48)
    rows = _votes(1, "V01", "ccc") + _votes(1, "C-FC-01", "ccc")
    report = review_package(package, _labels(tmp_path / "labels.jsonl", rows))
    assert report.status == "excluded" and report.note == (
        "S5 behavioural calibration fails (every retained task satisfies it, App. E.4): R3 - R1 = 18 points, not above "
        "the calibration gap of 20 points")
    assert [(a.step, a.candidates, a.accepted, a.excluded, a.decision) for a in report.attrition] == [
        ("S5 calibration", 1, 0, 1, "failed: R3 - R1 = 18 points, not above the calibration gap of 20 points"),
        ("S5/S6 round 1", 2, 2, 0, "accepted")]
    assert not (package.root / "MANIFEST.json").exists()


def test_a_package_passing_behavioural_calibration_is_frozen_with_it_in_its_trace(package, tmp_path):
    _calibration(package, 30, 45, 55)  # 30 < 45 < 55 and 55 - 30 = 25 > 20
    rows = _votes(1, "V01", "ccc") + _votes(1, "C-FC-01", "ccc")
    report = review_package(package, _labels(tmp_path / "labels.jsonl", rows))
    assert report.status == "frozen"
    assert [(a.step, a.accepted, a.decision) for a in report.attrition] == [
        ("S5 calibration", 1, "passed (R1 30, R2 45, R3 55; R3 - R1 must exceed 20 points)"),
        ("S5/S6 round 1", 2, "accepted")]
    _, diff = verify_snapshot(package.root)
    assert diff.clean


def test_review_rounds_already_decided_are_kept_and_their_labels_may_not_change(package, tmp_path):
    """A labels file that grows by a round: round 1 is decided once (repaired, awaiting round 2), then round 2 is
    added and the package freezes; changing a decided round's labels is refused in one line."""
    labels = tmp_path / "labels.jsonl"
    first = _votes(1, "V01", "ccc") + _votes(1, "W03", "iii") + _votes(1, "C-FC-01", "ccc")
    report = review_package(package, _labels(labels, first))
    assert report.status == "assembled" and report.note == "repaired in round 1; the package awaits review round 2"
    notes: list[str] = []
    report = review_package(package, _labels(labels, first + _votes(2, "V01", "ccc")), on_note=notes.append)
    assert notes == ["S5/S6 round 1: decided before (repaired); reused"]
    assert report.status == "frozen" and [a.decision for a in report.attrition] == ["repaired", "accepted"]
    changed = _labels(tmp_path / "changed.jsonl", _votes(1, "V01", "ccc") + _votes(1, "W03", "cci"))
    done = run_cli("author", "review", package.root, changed)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "the labels of round 1 differ from the ones that round was decided on" in done.stderr
