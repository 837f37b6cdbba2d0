"""A fact's verification state (App. E.2) and an atom's difficulty (App. E.3) follow from the evidence:
`snapshot validate` derives both and warns where a snapshot declares something else. Each expected state
below is worked out by hand from the rule in the test's comment."""

import json

import pytest
from testkit import edit_json, run_cli

from omnidr.benchmark._evidence import derive_difficulty, derive_verifications, registrable_domain
from omnidr.benchmark._facts import FactLibrary, Origin, Verification
from omnidr.benchmark._rubric import Atom, Difficulty

VIDEO_URL = "https://www.youtube.com/watch?v=abc"


def _web(fid, *sources, **extra):
    return {"id": fid, "claim": f"claim {fid}", "type": "claim", "origin": "web", "verification": "verified",
            "sources": [{"url": url, "kind": "webpage", "tier": tier} for url, tier in sources], **extra}


def _video(fid, **extra):
    return {"id": fid, "claim": f"claim {fid}", "type": "speech", "origin": "video", "verification": "verified",
            "video_ref": {"start_s": 1, "end_s": 2}, **extra}


def _states(*facts):
    derived = derive_verifications(FactLibrary.model_validate({"task_id": "t", "facts": list(facts)}), VIDEO_URL)
    return {fid: d.state.value for fid, d in derived.items()}


def test_registrable_domains_follow_the_public_suffix_list_without_fetching_it():
    assert registrable_domain("https://en.example-wiki.org/wiki/X") == "example-wiki.org"
    assert registrable_domain("https://forums.example.co.uk/t/1") == "example.co.uk"  # not "co.uk"
    # the private section: two github.io sites belong to two owners
    assert registrable_domain("https://alice.github.io/a") == "alice.github.io"
    assert registrable_domain("http://127.0.0.1:8000/x") == "127.0.0.1"


def test_verified_needs_two_registrable_domains_or_a_primary_source():
    states = _states(
        # two hosts, one registrable domain: one source domain, nothing primary -> single_source
        _web("W1", ("https://en.example-wiki.org/a", "tertiary"), ("https://de.example-wiki.org/a", "tertiary")),
        # two registrable domains -> verified
        _web("W2", ("https://www.example-a.org/x", "secondary"), ("https://news.example-b.co.uk/y", "secondary")),
        # one primary source -> verified
        _web("W3", ("https://www.example-maker.com/datasheet.pdf", "primary")),
        # two owners under github.io -> two domains -> verified
        _web("W4", ("https://alice.github.io/a", "secondary"), ("https://bob.github.io/b", "secondary")),
        # no source at all -> unavailable
        _web("W5", verification="unavailable"),
    )
    assert states == {"W1": "single_source", "W2": "verified", "W3": "verified", "W4": "verified",
                      "W5": "unavailable"}


def test_a_video_fact_is_one_source_until_an_independent_record_supports_it():
    states = _states(
        _video("V1"),  # the source video alone: one source, not primary for itself -> single_source
        _video("V2"),  # supported from example-wiki.org: youtube.com + example-wiki.org -> verified
        _video("V3"),  # supported only by another youtube.com video: still one domain -> single_source
        _video("V4"),  # only explained, not supported, by a primary page -> single_source
        _web("W1", ("https://en.example-wiki.org/a", "tertiary"), relations=[{"type": "support", "target": "V2"}]),
        _web("W2", ("https://www.youtube.com/watch?v=other", "secondary"),
             relations=[{"type": "support", "target": "V3"}]),
        _web("W3", ("https://www.example-maker.com/p", "primary"), relations=[{"type": "explanation", "target": "V4"}]),
    )
    assert (states["V1"], states["V2"], states["V3"], states["V4"]) == (
        "single_source", "verified", "single_source", "single_source")


def test_supported_records_that_conflict_are_both_disputed():
    states = _states(
        _video("V1"),
        _web("W1", ("https://www.example-maker.com/p", "primary"), conflicts_with=["V1"]),  # both sides disputed
        _video("V2"),
        _web("W2", verification="unavailable", conflicts_with=["V2"]),  # an unsupported rival disputes nothing
    )
    assert states == {"V1": "disputed", "W1": "disputed", "V2": "single_source", "W2": "unavailable"}


def _atom(direction, fact_id, evaluator="J", composes=(), **extra):
    return Atom.model_validate({"id": "a", "direction": direction, "criterion": "Does it?", "evaluator": evaluator,
                                "fact_id": fact_id, "composes": list(composes), "difficulty": "L0",
                                "evidence_note": "n", **extra})


@pytest.mark.parametrize(("atom", "level"), [
    (_atom("C-FC", "V1"), "L0"),  # one source-video fact
    (_atom("C-FC", "W1"), "L1"),  # one external fact
    (_atom("C-XV", "W1"), "L2"),  # a cross-source verification check
    (_atom("C-UC", "V1"), "L2"),  # a conflict check
    (_atom("C-FC", "VD"), "L2"),  # judged content on a disputed fact: the conflict has to be handled
    (_atom("R-CS", "WD"), "L1"),  # claim support on a disputed web fact: how it is cited, not the conflict
    (_atom("P-TN", "VD", evaluator="M", probe={"name": "timestamp_seeks", "params": {}}), "L0"),  # a machine check
    (_atom("C-CMP", "W1", composes=["V1"]), "L3"),  # composition across two distinct facts
    (_atom("C-CMP", "W1", composes=["W1"]), "L1"),  # the same fact twice is one fact
])
def test_difficulty_follows_the_atoms_evidence(atom, level):
    origins = {"V1": Origin.video, "W1": Origin.web, "VD": Origin.video, "WD": Origin.web}
    states = {"V1": Verification.single_source, "W1": Verification.verified, "VD": Verification.disputed,
              "WD": Verification.disputed}
    derived = derive_difficulty(atom, origins, states)
    assert derived is not None and derived[0] is Difficulty(level)


def test_an_atom_without_a_fact_or_with_an_unknown_one_is_not_derived():
    probe = {"name": "timestamp_seeks", "params": {}}
    assert derive_difficulty(_atom("P-TN", None, evaluator="M", probe=probe, impact="i"), {}, {}) is None
    assert derive_difficulty(_atom("C-FC", "V9"), {"V1": Origin.video}, {}) is None
    with pytest.raises(ValueError, match="composes facts needs a fact_id"):
        _atom("C-CMP", None, composes=["V1"])


def _index(snapshot, task, name, key, value):
    items = json.loads((snapshot / "tasks" / task / name).read_text("utf-8"))
    return next(i for i, x in enumerate(items["facts" if name == "facts.json" else "atoms"]) if x[key] == value)


def test_validate_warns_where_a_declared_state_or_level_disagrees_with_the_evidence(demo_copy):
    task = "nd-filter-waterfall"
    clean = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert clean.returncode == 0 and "0 warning(s)" in clean.stdout, clean.stdout
    w01 = _index(demo_copy, task, "facts.json", "id", "W01")  # one tertiary page on example-wiki.org
    cmp = _index(demo_copy, task, "rubric.json", "id", "C-CMP-02")  # comparison on one web fact (W09)
    qr = _index(demo_copy, task, "rubric.json", "id", "C-QR-01")  # composes V03 with V02 and W02: L3

    edit_json(demo_copy / "tasks" / task / "facts.json", lambda d: d["facts"][w01].update(verification="verified"))

    def rubric(d):
        d["atoms"][cmp]["difficulty"] = "L3"
        d["atoms"][qr]["composes"] = []  # now only the disputed video fact V03
        d["atoms"][qr + 1]["composes"] = ["W99"]

    edit_json(demo_copy / "tasks" / task / "rubric.json", rubric)
    r = run_cli("snapshot", "validate", "--no-videos", demo_copy)
    assert r.returncode == 1
    assert (f"warning: tasks/{task}/facts.json: facts[{w01}].verification: declared verified, but the evidence "
            "makes it single_source: its only source domain is example-wiki.org and no source is primary "
            "(App. E.2)") in r.stdout
    assert (f"warning: tasks/{task}/rubric.json: atoms[{cmp}].difficulty: declared L3, but the evidence makes it "
            "L1: it rests on one external fact (W09) (App. E.3)") in r.stdout
    assert (f"warning: tasks/{task}/rubric.json: atoms[{qr}].difficulty: declared L3, but the evidence makes it "
            "L2: it judges content on disputed fact V03, so the report must handle the conflict (App. E.3)") in r.stdout
    assert f"error: tasks/{task}/rubric.json: atoms[{qr + 1}].composes[0]: unknown fact id 'W99'" in r.stdout
