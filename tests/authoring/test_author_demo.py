"""`omnidr author` end to end on the demo, offline: the scripted model plays a demo task's authoring script, the
evidence agents run in the real sandbox (Docker), the video is probed by the real ffprobe. One run, shared by the
assertions (two S1b rounds of six routes, S1a, and the two model calls of S1c and S2)."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from testkit import DEMO, run_cli

from omnidr.benchmark import open_snapshot, validate_snapshot, verify_snapshot

pytestmark = [pytest.mark.docker, pytest.mark.media, pytest.mark.images("reference")]
TASK = "pendant-lamp-safety"
VIDEO = DEMO / "tasks" / TASK / "video.mp4"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


REQUEST = ("I am about to hang the same 6.8 kg glass pendant over my kitchen island myself. "
           "Which of the video's steps and numbers can I rely on?")


def _run_args(base: Path, request: str = REQUEST) -> list:
    """`omnidr author run`'s options after VIDEO and OUT, as the module's package was made."""
    return ["--like", DEMO, "--subcategory", "home_repair_diy", "--id", TASK, "--request", request,
            "--video-url", "https://www.youtube.com/watch?v=Pq7dLmpA3xK", "--script", base / "script.json",
            "--max-rounds", "2", "--labels", base / "labels.jsonl"]


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    base = tmp_path_factory.mktemp("author")
    script = base / "script.json"
    made = run_cli("author", "demo-script", DEMO, TASK, script)
    assert made.returncode == 0, made.stderr
    pkg = base / "pkg"
    labels = base / "labels.jsonl"  # S5: three raters accept four items in round 1
    labels.write_text("".join(json.dumps({"round": 1, "rater": f"r{n}", "item": item, "label": "correct"}) + "\n"
                              for item in ("V07", "W06", "C-FC-03", "C-XV-01") for n in (1, 2, 3)))
    ran = run_cli("author", "run", VIDEO, pkg, *_run_args(base), timeout=900)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return pkg, ran.stdout


def test_s1a_read_the_video_with_the_web_closed(package):
    pkg, _ = package
    [attempt] = [p / "1" for p in (pkg / "authoring" / "s1a" / "run" / "attempts").iterdir() if p.is_dir()]
    assert attempt.parent.name == "w0"  # 36 s of video: one window of 300 s, one session
    assert json.loads((attempt / "attempt.json").read_text())["proxy_mode"] == "deny"
    assert _jsonl(attempt / "logs" / "network.jsonl") == []  # not one web request, not even a refused one
    assert "/input/video.mp4" in (attempt / "input" / "instruction.txt").read_text()
    vmap = json.loads((pkg / "authoring" / "s1a" / "video-map.json").read_text())
    assert vmap["window_s"] == 300 and len(vmap["facts"]) == 9
    assert all(f["window"] == 0 and 0 <= f["start_s"] <= f["end_s"] <= 36 for f in vmap["facts"])
    # the seeded record whose span runs past the video's end is left out, with the reason
    assert [r["reason"] for r in vmap["rejected"]] == ["time span 30-66 s is not inside the video (0-36 s)"]


def test_s1b_routes_ran_alone_on_the_web_without_the_video(package):
    pkg, _ = package
    video_sha = hashlib.sha256(VIDEO.read_bytes()).hexdigest()
    rounds = sorted((pkg / "authoring" / "s1b").glob("round-*"))
    assert [r.name for r in rounds] == ["round-1", "round-2"]
    for folder in rounds:
        attempts = sorted(p for p in (folder / "run" / "attempts").iterdir() if p.is_dir())
        assert len(attempts) == 6  # each route its own session
        for task in (folder / "staging" / "tasks").iterdir():
            given = json.loads((task / "task.json").read_text())["video"]
            assert given["file"] == "video-withheld.txt" and given["sha256"] != video_sha
            assert "youtube" not in given["url"]
        every_file = [p for p in folder.rglob("*") if p.is_file()]
        assert not any(p.stat().st_size == VIDEO.stat().st_size and
                       hashlib.sha256(p.read_bytes()).hexdigest() == video_sha for p in every_file)
        for attempt in attempts:
            instruction = (attempt / "1" / "input" / "instruction.txt").read_text()
            assert "/input/video-withheld.txt" in instruction and "youtube" not in instruction
            assert json.loads((attempt / "1" / "attempt.json").read_text())["proxy_mode"] == "replay"
    fetched = [e for a in (rounds[0] / "run" / "attempts").iterdir() if a.is_dir() for e in _jsonl(a / "1" / "logs" / "network.jsonl")]
    assert fetched and all(e["status"] == 200 for e in fetched)
    wmap = json.loads((pkg / "authoring" / "s1b" / "web-map.json").read_text())
    assert [(r["new_claims"] > 0, r["saturated"]) for r in wmap["rounds"]] == [(True, False), (False, True)]
    assert wmap["stopped"] == "round limit"


def test_s1c_library_has_conflict_edges_and_computed_verification(package):
    pkg, _ = package
    rec = json.loads((pkg / "authoring" / "s1c" / "reconciliation.json").read_text())
    assert ["W06", "V07"] in rec["conflicts"]
    # the same datasheet passage in other words, found by two routes, is one record keeping both wordings
    [merged] = [e for e in rec["entries"] if len({p["key"].split("/")[0] for p in e["provenance"]}) > 1]
    assert {p["key"].split("/")[0] for p in merged["provenance"]} == {"entities", "concepts"}
    assert len({p["wording"] for p in merged["provenance"]}) == 2 and len(merged["record"]["sources"]) == 1
    facts = {f["id"]: f for f in json.loads((pkg / "tasks" / TASK / "facts.json").read_text())["facts"]}
    assert facts["V07"]["verification"] == facts["W06"]["verification"] == "disputed"
    assert facts["W11"]["verification"] == "unavailable" and not facts["W11"]["sources"]
    assert facts["W08"]["verification"] == "single_source" and facts["W01"]["verification"] == "verified"
    # the states the rule computed are the ones the released demo library declares
    released = {f["id"]: f["verification"] for f in json.loads((DEMO / "tasks" / TASK / "facts.json").read_text())["facts"]}
    assert {k: f["verification"] for k, f in facts.items()} == released


def test_s3_removed_the_seeded_bad_candidates_with_reasons(package):
    pkg, _ = package
    removed = {r["item"]: r["reason"] for r in
               json.loads((pkg / "authoring" / "s3" / "screening.json").read_text())["removed"]}
    assert removed == {
        "X-DUPLICATE": "duplicate of C-FC-01",
        "X-COMPOUND": "several claims: a compound criterion (split it into one question per claim)",
        "X-SUBJECTIVE": "subjective wording 'clearly'",
        "X-READINGS": "several readings: 'or' admits more than one answer",
        "X-DIRECTION": "outside its direction: C-VF checks video facts, W01 is a web fact",
        "X-NOEVIDENCE": "no evidence: fact W99 is not in the library",
    }
    rubric = json.loads((pkg / "tasks" / TASK / "rubric.json").read_text())
    levels = {a["id"]: a["difficulty"] for a in rubric["atoms"]}
    assert levels["C-FC-01"] == "L0" and levels["C-FC-05"] == "L1" and levels["C-XV-01"] == "L2"
    assert levels["C-CMP-02"] == "L3"


def test_the_package_validates_freezes_and_keeps_its_audit_trail(package):
    pkg, stdout = package
    report = validate_snapshot(pkg)
    assert not report.errors and not report.warnings
    manifest, diff = verify_snapshot(pkg)
    assert diff.clean and manifest.snapshot_id.startswith(f"{TASK}-")
    assert f"package {TASK}: frozen" in stdout and f"frozen as {manifest.snapshot_id}" in stdout
    assert "review round 1: item correctness 100.0% (4/4), unanimity 100.0% (4/4)" in stdout
    assert open_snapshot(pkg).tasks[TASK].rubric is not None
    trace = json.loads((pkg / "authoring" / "report.json").read_text())
    assert [(r["step"], r["candidates"], r["accepted"], r["excluded"]) for r in trace["attrition"]] == [
        ("S2", 51, 51, 0), ("S3", 51, 45, 6), ("S4", 45, 45, 0), ("S5/S6 round 1", 4, 4, 0)]
    for stage in ("s0", "s1a", "s1b", "s1c", "s2", "s3", "s4", "s6"):
        assert (pkg / "authoring" / stage / "record.json").is_file()
    # the model calls went through the gateway and are kept with their prompts
    for stage, name in (("s1c", "S1c"), ("s2", "S2")):
        [exchange] = _jsonl(pkg / "authoring" / stage / "run" / "attempts" / stage / "1" / "logs" / "gateway.jsonl")
        assert exchange["status"] == 200
        assert (pkg / "authoring" / stage / f"prompt-{stage}.txt").read_text().startswith(f"[ARC {name} {TASK}]")


def _copy(pkg: Path, to: Path) -> Path:
    shutil.copytree(pkg, to, symlinks=True)
    return to


def _votes(round_no: int, item: str, labels: str) -> list[dict]:
    """Three raters' labels of one item: 'cci' is correct, correct, incorrect."""
    return [{"round": round_no, "rater": f"r{i}", "item": item, "label": "correct" if c == "c" else "incorrect",
             "note": "the tester detail is misquoted" if item == "W03" and c == "i" else ""}
            for i, c in enumerate(labels, 1)]


CORRECTED = "A non-contact voltage tester whose battery is flat shows no light even when the wire is live."
REWORDED = "Does the report give the maximum fixture weight printed on the ceiling box label in the video?"


def test_s6_reruns_the_stage_that_made_each_finding_then_freezes(package, tmp_path):
    """Review round 1 finds a web fact, a video fact and a criterion incorrect: the web fact goes back to S1b (web, no
    video) and is recorded again as corrected, the video fact to S1a (video, no web), which finds nothing this time,
    so it and the criterion bound to it go; the criterion goes back to S2, whose new wording S3 keeps (and whose
    compound twin S3 removes). Round 2 accepts the repaired items and the package is frozen again."""
    built, _ = package
    pkg = _copy(built, tmp_path / "pkg")
    shutil.rmtree(pkg / "authoring" / "s6")  # the module's review, set aside: this test reviews the package anew
    script = json.loads((built.parent / "script.json").read_text())
    [record_w03] = [c for step in script["repair"]["facts"]["W03"] for c in step.get("tool_calls", [])
                    if c["name"] == "record_evidence"]
    record_w03["arguments"]["claim"] = CORRECTED
    script["repair"]["facts"]["V02"] = [{"content": "The breaker step shows no voltage test after all."}]
    c_fc_02 = json.loads(script["repair"]["criteria"]["C-FC-02"][0]["content"])["candidates"][0]
    answer = {"candidates": [{**c_fc_02, "criterion": REWORDED},
                             {**c_fc_02, "id": "C-FC-02b", "criterion": "Does the report give the box's limit and "
                              "does it give the pendant's weight?"}], "na_reasons": {}}
    script["repair"]["criteria"]["C-FC-02"] = [{"content": json.dumps(answer)}]
    (tmp_path / "script.json").write_text(json.dumps(script))
    labels = tmp_path / "labels.jsonl"
    rows = [v for item, said in (("V01", "ccc"), ("V03", "ccc"), ("W01", "ccc"), ("C-FC-01", "ccc"), ("W03", "iic"),
                                 ("V02", "iii"), ("C-FC-02", "iii")) for v in _votes(1, item, said)]
    rows += [v for item in ("W03", "C-FC-02", "C-CA-01") for v in _votes(2, item, "ccc")]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))

    done = run_cli("author", "review", pkg, labels, "--script", tmp_path / "script.json", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    # round 1: 7 items, 4 correct by majority; W03 and C-FC-02 repaired, V02 dropped; round 2: 3 of 3 correct
    assert "S5/S6 round 1: candidates 7, accepted 4, repaired 2, excluded 1 (repaired)" in done.stdout
    assert "S5/S6 round 2: candidates 3, accepted 3, repaired 0, excluded 0 (accepted)" in done.stdout
    assert "review round 1: item correctness 57.1% (4/7), unanimity 85.7% (6/7)" in done.stdout
    assert f"package {TASK}: frozen" in done.stdout
    round1 = json.loads((pkg / "authoring" / "s6" / "round-1" / "record.json").read_text())
    routes = {r["item"]: (r["stage"], r["replaced_by"], r["outcome"]) for r in round1["routed"]}
    assert routes == {"W03": ("S1b", ["W03"], "repaired"), "V02": ("S1a", [], "excluded"),
                      "C-FC-02": ("S2", ["C-FC-02"], "repaired"), "C-CA-01": ("S2", ["C-CA-01"], "repaired"),
                      "C-VF-01": ("S2", [], "excluded")}
    removed = {r["item"]: r["reason"] for r in round1["removed"]}
    assert removed["C-FC-02b"] == "several claims: a compound criterion (split it into one question per claim)"
    assert removed["C-VF-01"] == "no evidence: fact V02 is not in the library"
    facts = {f["id"]: f for f in json.loads((pkg / "tasks" / TASK / "facts.json").read_text())["facts"]}
    assert facts["W03"]["claim"] == CORRECTED and "V02" not in facts
    assert facts["W03"]["relations"] == [{"type": "explanation", "target": "V03"}]  # kept from the fact it replaces
    atoms = {a["id"]: a for a in json.loads((pkg / "tasks" / TASK / "rubric.json").read_text())["atoms"]}
    assert atoms["C-FC-02"]["criterion"] == REWORDED and "C-VF-01" not in atoms and "C-FC-02b" not in atoms
    # each rerun had its stage's doors, and the model calls went through the gateway
    s1a = pkg / "authoring" / "s6" / "round-1" / "s1a" / "run" / "attempts" / "fact-v02" / "1"
    assert json.loads((s1a / "attempt.json").read_text())["proxy_mode"] == "deny"
    assert _jsonl(s1a / "logs" / "network.jsonl") == []
    assert "/input/video.mp4" in (s1a / "input" / "instruction.txt").read_text()
    s1b = pkg / "authoring" / "s6" / "round-1" / "s1b"
    assert json.loads((s1b / "staging" / "tasks" / "fact-w03" / "task.json").read_text())["video"]["file"] == \
        "video-withheld.txt"
    assert "the tester detail is misquoted" in (s1b / "prompt-fact-w03.txt").read_text()
    for session in ("criterion-c-fc-02", "criterion-c-ca-01", "criterion-c-vf-01"):
        [exchange] = _jsonl(pkg / "authoring" / "s6" / "round-1" / "s2" / "run" / "attempts" / session / "1" / "logs"
                            / "gateway.jsonl")
        assert exchange["status"] == 200
    _, diff = verify_snapshot(pkg)
    assert diff.clean
    trace = json.loads((pkg / "authoring" / "report.json").read_text())["attrition"]
    assert [(r["step"], r["candidates"], r["accepted"], r["repaired"], r["excluded"]) for r in trace] == [
        ("S2", 51, 51, 0, 0), ("S3", 51, 45, 0, 6), ("S4", 45, 45, 0, 0), ("S5/S6 round 1", 7, 4, 2, 1),
        ("S5/S6 round 2", 3, 3, 0, 0)]


def test_an_interrupted_authoring_run_resumes_where_it_stopped(package, tmp_path):
    """The same `omnidr author run` again: on a finished package every stage is skipped and the frozen package is the
    same; on one interrupted in S1b's second round, S1a and round 1 are reused and the rest runs again to the same
    library and rubric."""
    built, _ = package
    base = built.parent
    snapshot_id = json.loads((built / "MANIFEST.json").read_text())["snapshot_id"]
    pkg = _copy(built, tmp_path / "pkg")
    again = run_cli("author", "run", VIDEO, pkg, *_run_args(base), timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    for name, stage in (("S1a", "s1a"), ("S1b", "s1b"), ("S1c", "s1c"), ("S2", "s2"), ("S3/S4", "s4")):
        assert f"{name}: done before (authoring/{stage}/record.json); skipped" in again.stdout
    assert "S5/S6 round 1: decided before (accepted); reused" in again.stdout
    assert json.loads((pkg / "MANIFEST.json").read_text())["snapshot_id"] == snapshot_id

    # interrupted in S1b round 2: its record not written, one session of the round not finished
    (pkg / "authoring" / "s1b" / "record.json").unlink()
    shutil.rmtree(pkg / "authoring" / "s1b" / "round-2" / "run" / "attempts" / "r2-timelines")
    resumed = run_cli("author", "run", VIDEO, pkg, *_run_args(base), timeout=900)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "S1a: done before (authoring/s1a/record.json); skipped" in resumed.stdout
    assert "authoring/s1b/round-1: its 6 session(s) ran before; reused" in resumed.stdout
    assert list((pkg / "authoring" / "s1b" / "round-2").glob("run.interrupted-*"))
    assert len([p for p in (pkg / "authoring" / "s1b" / "round-2" / "run" / "attempts").iterdir() if p.is_dir()]) == 6
    assert "S1c: done before" not in resumed.stdout and f"package {TASK}: frozen" in resumed.stdout
    for name in ("facts.json", "rubric.json"):
        assert (pkg / "tasks" / TASK / name).read_text() == (built / "tasks" / TASK / name).read_text()

    other = run_cli("author", "run", VIDEO, pkg, *_run_args(base, request="Another question?"))
    assert other.returncode == 2 and other.stderr.count("\n") == 1
    assert "holds a package of another request" in other.stderr
