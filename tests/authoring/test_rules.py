"""The rules of the authoring stages that need nothing but data: S1a's windows, S1b's saturation and stop, S3's
screening tests and S4's caps."""

from omnidr.authoring._criteria import assemble, screen
from omnidr.authoring._evidence_maps import saturation, stop_reason, video_map, web_claims
from omnidr.authoring._models import Candidate, RoundRecord
from omnidr.benchmark import EvidenceRecord, FactLibrary, Origin, Verification, VideoRef


def _video(i: int, anchor: str) -> dict:
    return {"id": f"E{i}", "claim": f"fact {i}", "modality": "video", "source_url": None, "anchor": anchor}


def test_s1a_keeps_a_fact_inside_one_window_only():
    vmap = video_map([_video(1, "speech@10-20"), _video(2, "visual@290-310"), _video(3, "parameter@301-320"),
                      _video(4, "mood@5-6"), _video(5, "speech@700-710")], duration_s=600.0, window_s=300.0,
                     attempts=["a"])
    assert [(f.key, f.window) for f in vmap.facts] == [("E1", 0), ("E3", 1)]
    assert [r.reason for r in vmap.rejected] == [
        "time span 290-310 s crosses the end of window 0 (300 s)",
        "anchor 'mood@5-6' is not TYPE@START-END with a known fact type",
        "time span 700-710 s is not inside the video (0-600 s)"]
    # a window's session keeps what lies in its own window
    own = video_map([_video(1, "speech@10-20"), _video(3, "parameter@301-320")], 600.0, 300.0, [], session_window=1,
                    prefix="w1/")
    assert [f.key for f in own.facts] == ["w1/E3"]
    assert [r.reason for r in own.rejected] == ["time span 10-20 s is in window 0, not in this session's window 1"]


def _web(i: int, url: str, claim: str) -> dict:
    return {"id": f"E{i}", "claim": claim, "modality": "web", "source_url": url, "excerpt": claim,
            "anchor": "claim@secondary", "verification": "excerpt_verified"}


def test_s1b_saturation_counts_new_claims_and_new_domains_against_earlier_rounds():
    first, _ = web_claims([_web(1, "https://a.example.org/x", "A"), _web(2, "https://b.example.org/y", "B")], "entities", 1)
    again, _ = web_claims([_web(1, "https://www.example.org/z", "a"), _web(2, "https://other.test/q", "B")], "people", 2)
    one = saturation(first, [], 1, 1, 1)
    two = saturation(again, first, 1, 1, 2)
    assert (one.new_claims, one.new_domains, one.saturated) == (2, 1, False)  # a. and b.example.org: one domain
    assert (two.new_claims, two.new_domains, two.saturated) == (0, 1, False)  # a new domain keeps it going
    assert saturation(again, first, 1, 2, 2).saturated  # unless the domain threshold is 2


def test_s1b_stops_after_two_consecutive_saturated_rounds_or_at_the_limit():
    def rounds(*flags: bool) -> list[RoundRecord]:
        return [RoundRecord(round=i, claims=1, new_claims=0, new_domains=0, saturated=f) for i, f in enumerate(flags, 1)]

    assert stop_reason(rounds(False, True), 5) is None
    assert stop_reason(rounds(False, True, False, True), 5) is None
    assert stop_reason(rounds(False, True, True), 5) == "saturated"
    assert stop_reason(rounds(False, False), 2) == "round limit"


LIBRARY = FactLibrary(task_id="t", facts=[
    EvidenceRecord(id="V01", claim="v", type="speech", origin=Origin.video, video_ref=VideoRef(start_s=0, end_s=1),
                   verification=Verification.single_source),
    EvidenceRecord(id="W01", claim="w", type="claim", origin=Origin.web, sources=[], verification=Verification.unavailable),
])


def _c(cid: str, direction: str, criterion: str, fact: str | None = "V01", **kw) -> Candidate:
    return Candidate(id=cid, direction=direction, criterion=criterion, evaluator=kw.pop("evaluator", "J"), fact_id=fact, **kw)


def test_s3_removes_each_kind_of_bad_candidate_with_its_reason_and_computes_difficulty():
    screening, atoms = screen([
        _c("ok", "C-FC", "Does the report state the voltage?"),
        _c("web", "C-FC", "Does the report state the standard?", "W01"),
        _c("nofact", "C-FC", "Does the report state the date?", None),
        _c("two", "C-FC", "Does it give the voltage? Does it give the current?"),
        _c("taste", "C-FC", "Does the report give a comprehensive account of the voltage?"),
        _c("either", "C-FC", "Does the report say either volt figure?"),
        _c("m", "P-RI", "Does index.html exist?", None, evaluator="M", probe={"name": "report_present", "params": {}}),
        _c("m-noimpact", "P-RI", "Does data.js exist?", None, evaluator="M", probe={"name": "data_valid", "params": {}}),
        _c("again", "C-FC", "Does the report state the voltage?"),
    ], LIBRARY, zh=False)
    assert screening.kept == ["ok", "web"]
    assert {r.item: r.reason.split(":")[0] for r in screening.removed} == {
        "nofact": "no evidence", "two": "several claims", "taste": "subjective wording 'comprehensive'",
        "either": "several readings", "m": "no evidence", "m-noimpact": "no evidence", "again": "duplicate of ok"}
    assert [a.difficulty.value for a in atoms] == ["L0", "L1"]


def test_s4_caps_a_high_volume_direction_and_keeps_only_given_na_reasons():
    _, atoms = screen([_c(f"fc{i}", "C-FC", f"Does the report state fact number {i}?") for i in range(4)], LIBRARY, False)
    rubric, placed, capped, na = assemble(atoms, {"C-XV": "No external source checks this video's claims.", "C-VF": " "},
                                          cap=3, task_id="t")
    assert placed["C-FC"] == ["fc0", "fc1", "fc2"] and [c.item for c in capped] == ["fc3"]
    assert na == {"C-XV": "No external source checks this video's claims."} and len(rubric.atoms) == 3
