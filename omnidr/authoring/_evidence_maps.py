"""S1a (video evidence map), S1b (web evidence map) and S1c (reconciliation into the fact library), App. E.2.

Open in the paper, chosen here:
- S1a keeps a fact only when its time span lies inside one T_win window and inside the video (App. E.2 reads the
  video in windows of T_win; a fact that spans two windows was not observed by one reader).
- S1b's saturation is counted over a whole round (all routes): a round is saturated when its new claims and its new
  source domains are both below their thresholds (`Budgets`); collection stops after two consecutive saturated
  rounds or at the round limit. A claim is new when its normalised wording was not recorded in an earlier round;
  a domain is new when no earlier claim had a source there (registrable domains, as the verification rule counts).
  Round N > 1 is told the claims found so far (App. E.2: "discovered entities are fed into later rounds").
- S1c merges two web claims when their normalised wordings are equal or when they quote the same passage of the same
  page, and the pairs the reconciling model names as equivalent; the first wording is the record's claim, the others
  stay in its provenance. Relations and conflict edges between the maps are the reconciling model's (one model call
  through the gateway); the verification state of every record is then computed, never asked, by the rule of
  App. E.2 (`omnidr.benchmark.derive_verifications`). Claims the model reports as unresolved (no usable source)
  become records with no source, which the rule makes `unavailable`.
- Ids: video facts V01.. in time order, web records W01.. in the order they were first recorded (route order, then
  the agent's order); the ids are given to the reconciling model, so its links name them.
"""

import math
import re
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from omnidr.benchmark import (
    EvidenceFactType,
    EvidenceRecord,
    EvidenceSource,
    FactLibrary,
    Origin,
    Relation,
    Verification,
    VideoRef,
    derive_verifications,
    registrable_domain,
)
from omnidr.errors import UserError
from omnidr.paths import AttemptPaths
from sandbox.models import RelationType

from ._agents import ModelEndpoint, Session, agent_evidence, answer_json, marker, run_sessions
from ._models import (
    ROUTES,
    LibraryEntry,
    Provenance,
    Reconciliation,
    Rejected,
    RoundRecord,
    VideoFact,
    VideoMap,
    WebClaim,
    WebMap,
)
from ._package import Package, dump, write_library

VIDEO_ANCHOR = re.compile(r"^\s*(\w+)\s*@\s*([\d.]+)\s*-\s*([\d.]+)\s*$")
WEB_ANCHOR = re.compile(r"^\s*(\w+)\s*@\s*(primary|secondary|tertiary)\s*$")
KINDS = {"web": "webpage", "document": "document", "image": "image", "video": "video"}
FACT_TYPES = tuple(t.value for t in EvidenceFactType)


def normalize(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


def canonical_url(url: str) -> str:
    """Lower-case scheme and host, no fragment: the URL a record names (App. E.2's canonical URL)."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


# ---- S1a ----------------------------------------------------------------------------------------------

def s1a_sessions(pkg: Package, script: dict | None) -> list[Session]:
    """One session per T_win window of the video (App. E.2: long videos are split into windows for parallel
    audiovisual reading). The script's `s1a` is window 0's steps, or {"w<k>": steps} per window."""
    draft = pkg.draft()
    window = pkg.hyperparameters().window_s
    duration = pkg.task(draft).video.duration_s
    steps = (script or {}).get("s1a")
    out = []
    for k in range(max(1, math.ceil(duration / window))):
        m = marker("S1a", draft.id, f"w{k}")
        a, b = k * window, min((k + 1) * window, duration)
        prompt = (f"{m} ARC stage S1a, the video evidence map. You have the source video and no web. Do not write a "
                  f"report. Read window {k} of the video, {a:g} s to {b:g} s (windows of {window:g} s; read_window "
                  f"index {k}), and record every observable fact in it with the evidence tool, one atomic claim per "
                  "record: speech, visible text, entities, actions, procedures, parameters and unresolved visual "
                  "details. Give modality 'video', video_time_s the moment it starts, the excerpt you heard or saw, "
                  f"and anchor 'TYPE@START-END' (TYPE one of {', '.join(FACT_TYPES)}; START and END in seconds, "
                  f"inside this window). The user's request, for relevance only: {draft.request}")
        mine = steps.get(f"w{k}") if isinstance(steps, dict) else steps if k == 0 else None
        out.append(Session(f"w{k}", prompt, m, mine))
    return out


def video_map(records: list[dict], duration_s: float, window_s: float, attempts: list[str],
              session_window: int | None = None, prefix: str = "") -> VideoMap:
    """The facts a session recorded that lie inside one window (its own, `session_window`, when given) and inside
    the video; the others with the reason they were left out."""
    facts, rejected = [], []
    for r in records:
        key = f"{prefix}{r.get('id')}"
        match = VIDEO_ANCHOR.match(r.get("anchor") or "")
        if r.get("modality") != "video" or r.get("source_url"):
            rejected.append(Rejected(item=key, reason="not a video observation (S1a keeps video facts only)"))
        elif match is None or match.group(1) not in FACT_TYPES:
            rejected.append(Rejected(item=key, reason=f"anchor {r.get('anchor')!r} is not TYPE@START-END with a "
                                     "known fact type"))
        else:
            start, end = float(match.group(2)), float(match.group(3))
            window = int(start // window_s)
            if end < start or end > duration_s + 0.5:
                rejected.append(Rejected(item=key, reason=f"time span {start:g}-{end:g} s is not inside the video "
                                         f"(0-{duration_s:g} s)"))
            elif end > (window + 1) * window_s:
                rejected.append(Rejected(item=key, reason=f"time span {start:g}-{end:g} s crosses the end of window "
                                         f"{window} ({(window + 1) * window_s:g} s)"))
            elif session_window is not None and window != session_window:
                rejected.append(Rejected(item=key, reason=f"time span {start:g}-{end:g} s is in window {window}, not "
                                         f"in this session's window {session_window}"))
            else:
                facts.append(VideoFact(key=key, claim=r["claim"], type=match.group(1), start_s=start, end_s=end,
                                       window=window, excerpt=r.get("excerpt") or ""))
    return VideoMap(facts=facts, rejected=rejected, window_s=window_s, attempts=attempts)


def run_s1a(pkg: Package, endpoint: ModelEndpoint, script: dict | None, on_note: Callable[[str], None]) -> VideoMap:
    """S1a: one agent session per window, each with the video and the web closed (proxy mode deny)."""
    draft = pkg.draft()
    stage = pkg.stage("s1a")
    sessions = s1a_sessions(pkg, script)
    done = run_sessions(pkg, stage, sessions, capability="multimodal", proxy_mode="deny", with_video=True,
                        endpoint=endpoint, on_note=on_note)
    duration, window_s = pkg.task(draft).video.duration_s, pkg.hyperparameters().window_s
    attempts = [done[s.id].relative_to(pkg.root).as_posix() for s in sessions]
    vmap = VideoMap(facts=[], rejected=[], window_s=window_s, attempts=attempts)
    for k, s in enumerate(sessions):
        part = video_map(agent_evidence(done[s.id]), duration, window_s, [], session_window=k, prefix=f"{s.id}/")
        vmap.facts += part.facts
        vmap.rejected += part.rejected
    dump(stage / "video-map.json", vmap)
    dump(stage / "record.json", {"stage": "S1a", "inputs": {"video": pkg.task(draft).video.file, "web": "deny"},
                                 "prompts": [f"prompt-{s.id}.txt" for s in sessions], "attempts": attempts,
                                 "outputs": ["video-map.json"], "kept": len(vmap.facts),
                                 "rejected": [r.model_dump() for r in vmap.rejected]})
    return vmap


# ---- S1b ----------------------------------------------------------------------------------------------

def s1b_sessions(pkg: Package, round_no: int, known: list[WebClaim], script: dict | None) -> list[Session]:
    draft = pkg.draft()
    fed = "".join(f"\n- {c.claim}" for c in known)
    out = []
    for route in draft.routes:
        m = marker("S1b", draft.id, route)
        prompt = (f"{m} ARC stage S1b, the web evidence map, route '{route}': {ROUTES[route]}. You have the web and "
                  "no access to the source video. Do not write a report. Research the request on this route only: "
                  "search, open each source, and record each atomic claim with the evidence tool: the claim, "
                  "source_url (the canonical URL you opened), the verbatim excerpt, the source's publication date, "
                  "modality (web, document, image or video) and anchor 'TYPE@TIER' (TYPE one of "
                  f"{', '.join(FACT_TYPES)}; TIER primary, secondary or tertiary). Request: {draft.request}"
                  + (f"\nRound {round_no}. Already found (record only what is new):{fed}" if known else ""))
        out.append(Session(f"r{round_no}-{route}", prompt, m, ((script or {}).get("s1b") or {}).get(route)))
    return out


def web_claims(records: list[dict], route: str, round_no: int) -> tuple[list[WebClaim], list[Rejected]]:
    kept, rejected = [], []
    for r in records:
        key = f"{route}/r{round_no}/{r.get('id')}"
        match = WEB_ANCHOR.match(r.get("anchor") or "")
        if not r.get("source_url"):
            rejected.append(Rejected(item=key, reason="no source URL (S1b records sourced claims)"))
        elif match is None or match.group(1) not in FACT_TYPES:
            rejected.append(Rejected(item=key, reason=f"anchor {r.get('anchor')!r} is not TYPE@TIER with a known type"))
        elif r.get("modality") not in KINDS:
            rejected.append(Rejected(item=key, reason=f"unknown modality {r.get('modality')!r}"))
        else:
            kept.append(WebClaim(route=route, round=round_no, key=key, claim=r["claim"], type=match.group(1),
                                 url=canonical_url(r["source_url"]), kind=KINDS[r["modality"]],
                                 tier=match.group(2), date=r.get("date"), quote=r.get("excerpt") or "",
                                 quote_checked=r.get("verification") == "excerpt_verified"))
    return kept, rejected


def saturation(found: list[WebClaim], earlier: list[WebClaim], claims_below: int, domains_below: int,
               round_no: int) -> RoundRecord:
    """The round's new claims and new domains against every earlier round, and whether it is saturated."""
    seen = {normalize(c.claim) for c in earlier}
    domains = {registrable_domain(c.url) for c in earlier}
    new_claims = {normalize(c.claim) for c in found} - seen
    new_domains = {registrable_domain(c.url) for c in found} - domains
    return RoundRecord(round=round_no, claims=len(found), new_claims=len(new_claims), new_domains=len(new_domains),
                       saturated=len(new_claims) < claims_below and len(new_domains) < domains_below)


def keep_recorded(pkg: Package, attempts, on_note: Callable[[str], None]) -> None:
    """`--web record`: the pages the sessions read become the package's web corpus (a URL it has keeps its page)."""
    from sandbox.egress import CorpusError, CorpusRecorder

    recorder = CorpusRecorder(pkg.root / "web")
    for attempt in attempts:
        recording = AttemptPaths(attempt).recording
        if (recording / "corpus.json").is_file():
            try:
                added, _ = recorder.add_corpus(recording)
            except CorpusError as exc:
                on_note(f"S1b: {attempt}: recording not kept: {exc}")
                continue
            on_note(f"S1b: {added} recorded page(s) of {attempt.parent.name} added to the package's web/")


def stop_reason(rounds: list[RoundRecord], limit: int) -> str | None:
    """Why collection stops after `rounds`: two consecutive saturated rounds, or the round limit; None: go on."""
    if len(rounds) >= 2 and rounds[-1].saturated and rounds[-2].saturated:
        return "saturated"
    return "round limit" if len(rounds) >= limit else None


def run_s1b(pkg: Package, endpoint: ModelEndpoint, script: dict | None, on_note: Callable[[str], None],
            max_rounds: int | None = None) -> WebMap:
    """S1b: each route its own session with the web and without the video, round after round until two
    consecutive rounds are saturated or the round limit."""
    draft = pkg.draft()
    budgets = draft.budgets
    limit = max_rounds or budgets.max_rounds
    proxy = endpoint.web
    claims: list[WebClaim] = []
    rejected: list[Rejected] = []
    rounds: list[RoundRecord] = []
    attempts: list[str] = []
    stopped = "round limit"
    for round_no in range(1, limit + 1):
        sessions = s1b_sessions(pkg, round_no, claims, script)
        done = run_sessions(pkg, pkg.stage("s1b") / f"round-{round_no}", sessions, capability="multimodal",
                            proxy_mode=proxy, with_video=False, endpoint=endpoint, on_note=on_note)
        found: list[WebClaim] = []
        for route, s in zip(draft.routes, sessions, strict=True):
            attempts.append(done[s.id].relative_to(pkg.root).as_posix())
            kept, bad = web_claims(agent_evidence(done[s.id]), route, round_no)
            found += kept
            rejected += bad
        if proxy == "record":
            keep_recorded(pkg, done.values(), on_note)
        rounds.append(saturation(found, claims, budgets.new_claims_below, budgets.new_domains_below, round_no))
        claims += found
        if (why := stop_reason(rounds, limit)) is not None:
            stopped = why
            break
    wmap = WebMap(claims=claims, rejected=rejected, rounds=rounds, stopped=stopped, attempts=attempts)
    dump(pkg.stage("s1b") / "web-map.json", wmap)
    dump(pkg.stage("s1b") / "record.json", {
        "stage": "S1b", "inputs": {"video": "withheld", "web": proxy, "routes": draft.routes},
        "attempts": attempts, "rounds": [r.model_dump() for r in rounds], "stopped": stopped,
        "outputs": ["web-map.json"], "rejected": [r.model_dump() for r in rejected]})
    return wmap


# ---- S1c ----------------------------------------------------------------------------------------------

def _groups(claims: list[WebClaim]) -> list[list[WebClaim]]:
    """Web claims grouped by equal wording or the same quotation of the same page, in first-recorded order."""
    parent = list(range(len(claims)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple, int] = {}
    for i, c in enumerate(claims):
        for key in (("claim", normalize(c.claim)), ("quote", c.url, normalize(c.quote)) if c.quote else None):
            if key is None:
                continue
            if key in first:
                a, b = find(first[key]), find(i)
                parent[max(a, b)] = min(a, b)
            else:
                first[key] = i
    order: dict[int, list[WebClaim]] = {}
    for i, c in enumerate(claims):
        order.setdefault(find(i), []).append(c)
    return [order[k] for k in sorted(order)]


def draft_library(vmap: VideoMap, wmap: WebMap) -> tuple[list[LibraryEntry], list[list[str]]]:
    """The maps as provisional library records (ids V01.., W01..) before the reconciling model's links."""
    entries: list[LibraryEntry] = []
    video = sorted(enumerate(vmap.facts), key=lambda p: (p[1].start_s, p[0]))
    for n, (_, f) in enumerate(video, 1):
        rec = EvidenceRecord(id=f"V{n:02d}", claim=f.claim, type=f.type, origin=Origin.video,
                             video_ref=VideoRef(start_s=f.start_s, end_s=f.end_s),
                             verification=Verification.single_source)
        entries.append(LibraryEntry(record=rec, provenance=[Provenance(stage="S1a", key=f.key, wording=f.claim)], why=""))
    merges = []
    for n, group in enumerate(_groups(wmap.claims), 1):
        sources: dict[str, EvidenceSource] = {}
        for c in group:
            sources.setdefault(c.url, EvidenceSource(url=c.url, kind=c.kind, tier=c.tier,
                                                      published=c.date or None, quote=c.quote or None))
        rec = EvidenceRecord(id=f"W{n:02d}", claim=group[0].claim, type=group[0].type, origin=Origin.web,
                             sources=list(sources.values()), verification=Verification.single_source)
        entries.append(LibraryEntry(record=rec, provenance=[Provenance(stage="S1b", key=c.key, wording=c.claim)
                                                            for c in group], why=""))
        if len({normalize(c.claim) for c in group}) > 1 or len({c.route for c in group}) > 1:
            merges.append([c.key for c in group])
    return entries, merges


def s1c_session(pkg: Package, entries: list[LibraryEntry], script: dict | None) -> Session:
    draft = pkg.draft()
    m = marker("S1c", draft.id)
    lines = "\n".join(f"- {e.record.id} ({e.record.origin.value}, {e.record.type.value}): {e.record.claim}"
                      for e in entries)
    prompt = (f"{m} ARC stage S1c, reconciliation. Do not use tools and do not write a report. Below are the video "
              "evidence map (V ids) and the web evidence map (W ids) of the request. Answer with one JSON object: "
              '{"links": [{"from": ID, "type": "support|contradiction|update|explanation|comparison|application", '
              '"to": ID}], "equivalent": [[ID, ID]], "unresolved": [{"claim": TEXT, "type": TYPE}]}. Keep numerical '
              "or factual disagreements as contradiction links (never resolve them); name statements that say the "
              "same thing as equivalent; list questions the request raises that no source answers as unresolved."
              f"\nRequest: {draft.request}\n{lines}")
    return Session("s1c", prompt, m, (script or {}).get("s1c"))


def reconcile(entries: list[LibraryEntry], answer: dict, video_url: str, task_id: str) -> Reconciliation:
    by_id = {e.record.id: e for e in entries}
    alias: dict[str, str] = {}
    merges: list[list[str]] = []
    for pair in answer.get("equivalent") or []:
        a, b = (alias.get(x, x) for x in pair[:2])
        if a in by_id and b in by_id and a != b and by_id[a].record.origin is by_id[b].record.origin:
            keep, gone = by_id[a], by_id.pop(b)
            urls = {s.url for s in keep.record.sources}
            extra = [s for s in gone.record.sources if s.url not in urls]
            keep.record = keep.record.model_copy(update={"sources": keep.record.sources + extra})
            keep.provenance += gone.provenance
            alias[b] = a
            merges.append([a, b])
    relations: dict[str, list[Relation]] = {i: [] for i in by_id}
    conflicts: dict[str, list[str]] = {i: [] for i in by_id}
    edges: list[list[str]] = []
    for link in answer.get("links") or []:
        src, dst, kind = alias.get(link.get("from"), link.get("from")), alias.get(link.get("to"), link.get("to")), link.get("type")
        if src not in by_id or dst not in by_id or src == dst or kind not in RelationType.__members__:
            continue
        relations[src].append(Relation(type=RelationType(kind), target=dst))
        if kind == "contradiction" and dst not in conflicts[src]:
            conflicts[src].append(dst)
            edges.append([src, dst])
    n = sum(1 for e in by_id.values() if e.record.origin is Origin.web)
    for item in answer.get("unresolved") or []:
        if not isinstance(item, dict) or not item.get("claim"):
            continue
        n += 1
        kind = item.get("type") if item.get("type") in FACT_TYPES else "claim"
        rec = EvidenceRecord(id=f"W{n:02d}", claim=item["claim"], type=kind, origin=Origin.web, sources=[],
                             verification=Verification.unavailable)
        by_id[rec.id] = LibraryEntry(record=rec, provenance=[Provenance(stage="S1c", key="unresolved", wording=item["claim"])], why="")
        relations[rec.id], conflicts[rec.id] = [], []
    for fid, e in by_id.items():
        e.record = e.record.model_copy(update={"relations": relations[fid], "conflicts_with": conflicts[fid]})
    library = FactLibrary(task_id=task_id, facts=[e.record for e in by_id.values()])
    states = derive_verifications(library, video_url)
    for fid, e in by_id.items():
        e.record = e.record.model_copy(update={"verification": states[fid].state})
        e.why = states[fid].why
    return Reconciliation(entries=list(by_id.values()), merges=merges, conflicts=edges)


def run_s1c(pkg: Package, endpoint: ModelEndpoint, script: dict | None, on_note: Callable[[str], None]) -> Reconciliation:
    draft = pkg.draft()
    vmap = pkg.read("s1a", "video-map.json", VideoMap)
    wmap = pkg.read("s1b", "web-map.json", WebMap)
    entries, merges = draft_library(vmap, wmap)
    if not entries:
        raise UserError("S1c: both evidence maps are empty; rerun S1a and S1b")
    stage = pkg.stage("s1c")
    session = s1c_session(pkg, entries, script)
    attempt = run_sessions(pkg, stage, [session], capability="interface_only", proxy_mode="deny", with_video=False,
                           endpoint=endpoint, on_note=on_note)[session.id]
    answer = answer_json(attempt, "S1c")
    result = reconcile(entries, answer, pkg.task(draft).video.url, draft.id)
    result.merges[:0] = merges
    dump(stage / "answer.json", answer)
    dump(stage / "reconciliation.json", result)
    write_library(pkg, draft, FactLibrary(task_id=draft.id, facts=[e.record for e in result.entries]))
    dump(stage / "record.json", {
        "stage": "S1c", "inputs": ["s1a/video-map.json", "s1b/web-map.json"], "prompt": f"prompt-{session.id}.txt",
        "attempt": attempt.relative_to(pkg.root).as_posix(), "model_answer": "answer.json",
        "outputs": ["reconciliation.json", f"tasks/{draft.id}/facts.json"],
        "decisions": {"merges": result.merges, "conflict_edges": result.conflicts,
                      "verification": {e.record.id: [e.record.verification.value, e.why] for e in result.entries}}})
    return result
