"""`omnidr author` end to end on the demo, offline: the scripted model plays a demo task's authoring script, the
evidence agents run in the real sandbox (Docker), the video is probed by the real ffprobe. One run, shared by the
assertions (two S1b rounds of six routes, S1a, and the two model calls of S1c and S2)."""

import hashlib
import json
from pathlib import Path

import pytest
from testkit import DEMO, run_cli

from omnidr.benchmark import open_snapshot, validate_snapshot, verify_snapshot

pytestmark = [pytest.mark.docker, pytest.mark.media]
TASK = "pendant-lamp-safety"
VIDEO = DEMO / "tasks" / TASK / "video.mp4"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


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
    ran = run_cli("author", "run", VIDEO, pkg, "--like", DEMO, "--subcategory", "home_repair_diy", "--id", TASK,
                  "--request", "I am about to hang the same 6.8 kg glass pendant over my kitchen island myself. "
                  "Which of the video's steps and numbers can I rely on?",
                  "--video-url", "https://www.youtube.com/watch?v=Pq7dLmpA3xK", "--script", script,
                  "--max-rounds", "2", "--labels", labels, timeout=900)
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
