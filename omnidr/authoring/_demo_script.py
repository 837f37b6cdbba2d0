"""The per-task authoring script the scripted model plays offline: the model's side of every authoring session
(S1a, each S1b route, S1c, S2), derived from a demo task's released fact library and rubric, with seeded bad
candidates for S3 to remove. Like the research scripts (`sandbox/scripted_model`), this demonstrates the machinery,
not a model's work.

    {"task": ID, "s1a": [steps], "s1b": {ROUTE: [steps]}, "s1c": [steps], "s2": [steps],
     "repair": {"facts": {FACT_ID: [steps]}, "criteria": {ATOM_ID: [steps]}}}   (S6's reruns, one session per item)

Each steps list is a scripted-model script's `steps` (tool calls of the reference agent, then a final message).
"""

import json
from pathlib import Path

from omnidr.benchmark import Origin, open_snapshot

from ._models import ROUTES

# Candidates S3 must remove, one per screening test (id -> the fields that differ from a plain J content atom).
SEEDED = {
    "X-COMPOUND": {"direction": "C-FC", "fact": "web", "criterion": "Does the report state the box's weight limit and "
                   "does it give the lamp's wattage rating?"},
    "X-SUBJECTIVE": {"direction": "C-CA", "fact": "web", "criterion": "Does the report clearly explain the first "
                     "external finding?"},
    "X-READINGS": {"direction": "C-FC", "fact": "video", "criterion": "Does the report say the video's measurement is "
                   "24 or 30 inches?"},
    "X-DIRECTION": {"direction": "C-VF", "fact": "web", "criterion": "Does the report restate the first external "
                    "finding as something the video shows?"},
    "X-NOEVIDENCE": {"direction": "C-FC", "fact": "missing", "criterion": "Does the report state the warranty period "
                     "of the product?"},
}


def _call(cid: str, name: str, arguments: dict) -> dict:
    return {"id": cid, "name": name, "arguments": arguments}


def demo_script(snapshot: Path, task_id: str) -> dict:
    snap = open_snapshot(snapshot)
    bundle = snap.tasks.get(task_id)
    if bundle is None or bundle.facts is None or bundle.rubric is None:
        raise ValueError(f"{snapshot}: no report task {task_id!r} with facts and a rubric")
    facts, rubric = bundle.facts.facts, bundle.rubric
    video = [f for f in facts if f.origin is Origin.video]
    web = [f for f in facts if f.origin is Origin.web and f.sources]
    unresolved = [f for f in facts if f.origin is Origin.web and not f.sources]
    records = [_call(f"v{i}", "record_evidence", {
        "claim": f.claim, "modality": "video", "excerpt": f.claim, "video_time_s": f.video_ref.start_s,  # type: ignore[union-attr]
        "anchor": f"{f.type.value}@{f.video_ref.start_s:g}-{f.video_ref.end_s:g}"})  # type: ignore[union-attr]
        for i, f in enumerate(video, 1)]
    last = video[-1].video_ref
    assert last is not None
    records.append(_call("vbad", "record_evidence", {  # seeded: a span past the video's end, for S1a to reject
        "claim": "A detail appears after the video ends.", "modality": "video", "excerpt": "seen at the end",
        "video_time_s": last.start_s, "anchor": f"visual@{last.start_s:g}-{last.end_s + 30:g}"}))
    s1a = [{"content": "Probe, read the window, record what the video shows.", "tool_calls": [_call("probe", "probe_video", {})]},
           {"tool_calls": [_call("rw0", "read_window", {"index": 0, "frames": 2})]},
           {"tool_calls": records}, {"content": "Video evidence map recorded."}]
    routes = list(ROUTES)
    chunks: dict[str, list] = {r: [] for r in routes}
    for i, f in enumerate(web):  # contiguous chunks keep first-recorded order = the released ids
        chunks[routes[min(i * len(routes) // max(len(web), 1), len(routes) - 1)]].append(f)
    s1b: dict[str, list] = {}
    kinds = {"webpage": "web", "document": "document", "image": "image", "video": "video"}
    dup = next((f for f in web if f.sources[0].quote), None)
    for route in routes:
        items = [(f, f.claim) for f in chunks[route]]
        if route == "concepts" and dup is not None:  # the same passage in other words: S1c merges it, keeping both
            items.insert(0, (dup, f"In other words: {dup.claim[0].lower()}{dup.claim[1:]}"))
        urls = list(dict.fromkeys(f.sources[0].url for f, _ in items))
        calls = [_call(f"open{i}", "fetch_url", {"url": u}) for i, u in enumerate(urls, 1)]
        recs = []
        for i, (f, wording) in enumerate(items, 1):
            s = f.sources[0]
            args = {"claim": wording, "modality": kinds[s.kind.value], "source_url": s.url,
                    "excerpt": s.quote or f.claim, "anchor": f"{f.type.value}@{s.tier.value}"}
            if s.published:
                args["date"] = s.published.isoformat()
            recs.append(_call(f"w{i}", "record_evidence", args))
        s1b[route] = ([{"content": f"Route {route}: open the sources.", "tool_calls": calls}] if calls else []) + \
            ([{"tool_calls": recs}] if recs else []) + [{"content": f"Route {route} recorded."}]
    links = [{"from": f.id, "type": r.type.value, "to": r.target} for f in facts for r in f.relations]
    s1c_answer = {"links": links, "equivalent": [],
                  "unresolved": [{"claim": f.claim, "type": f.type.value} for f in unresolved]}
    pick = {"web": web[0].id, "video": video[0].id, "missing": "W99"}
    candidates = [a.model_dump(mode="json", exclude={"difficulty"}, exclude_none=True) for a in rubric.atoms]
    candidates.insert(1, {**candidates[0], "id": "X-DUPLICATE"})
    for cid, spec in SEEDED.items():
        candidates.append({"id": cid, "direction": spec["direction"], "criterion": spec["criterion"], "evaluator": "J",
                           "fact_id": pick[spec["fact"]], "evidence_note": "seeded for the S3 demonstration"})
    s2_answer = {"candidates": candidates, "na_reasons": dict(rubric.na_reasons)}
    return {"task": task_id, "s1a": s1a, "s1b": s1b,
            "s1c": [{"content": json.dumps(s1c_answer, ensure_ascii=False)}],
            "s2": [{"content": json.dumps(s2_answer, ensure_ascii=False)}],
            "repair": repair_script(facts, rubric.atoms, snap.hyperparameters.window_s if snap.hyperparameters else 300.0)}


def repair_script(facts: list, atoms: list, window_s: float) -> dict:
    """S6's sessions, one per fact and per criterion a review may send back: a fact is observed or researched again
    and recorded as the release states it; a criterion is written again as the release states it (so the demo
    shows the routing and the reruns; a lab's model writes the corrections)."""
    kinds = {"webpage": "web", "document": "document", "image": "image", "video": "video"}
    out: dict = {"facts": {}, "criteria": {}}
    for f in facts:
        if f.origin is Origin.video and f.video_ref is not None:
            k = int(f.video_ref.start_s // window_s)
            out["facts"][f.id] = [
                {"content": f"Read window {k} again.", "tool_calls": [_call("rw", "read_window", {"index": k, "frames": 2})]},
                {"tool_calls": [_call("rec", "record_evidence", {
                    "claim": f.claim, "modality": "video", "excerpt": f.claim, "video_time_s": f.video_ref.start_s,
                    "anchor": f"{f.type.value}@{f.video_ref.start_s:g}-{f.video_ref.end_s:g}"})]},
                {"content": f"{f.id} observed again."}]
        elif f.sources:
            src = f.sources[0]
            args = {"claim": f.claim, "modality": kinds[src.kind.value], "source_url": src.url,
                    "excerpt": src.quote or f.claim, "anchor": f"{f.type.value}@{src.tier.value}"}
            if src.published:
                args["date"] = src.published.isoformat()
            out["facts"][f.id] = [
                {"content": "Open the source again.", "tool_calls": [_call("open", "fetch_url", {"url": src.url})]},
                {"tool_calls": [_call("rec", "record_evidence", args)]}, {"content": f"{f.id} researched again."}]
        else:  # an open question: still no usable source
            out["facts"][f.id] = [{"content": f"No usable source for {f.id} was found."}]
    for a in atoms:
        answer = {"candidates": [a.model_dump(mode="json", exclude={"difficulty"}, exclude_none=True)], "na_reasons": {}}
        out["criteria"][a.id] = [{"content": json.dumps(answer, ensure_ascii=False)}]
    return out
