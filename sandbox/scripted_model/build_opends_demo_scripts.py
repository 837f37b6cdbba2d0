"""Developer tool: regenerate the scripted model's episodes for the OpenDS-World demo (snapshots/demo-opends).

    python -m sandbox.scripted_model.build_opends_demo_scripts snapshots/demo-opends

The report demo's scripts are derived from its fact libraries (`build_demo_scripts`); a short-answer task has
none, so each episode here is written by hand: the rounds of tool calls a model makes on the task's evidence
path, in the reference agent's tool names (search_web, fetch_url, browser_open/fill/submit/click/read,
download_file, read_artifact, sample_video, read_subtitles), and the answer it gives. From one episode come
both forms the scripted model plays:

* `scripts/<task>.json`, the reference agent's chat script: one assistant turn per round, then a final message
  without tool calls whose content is the answer (paper 002, App. C.2.3: research ends with a complete,
  non-empty answer). An episode with `keeps_going` never gives that message: after its research it goes on
  cross-checking with more tool calls than the protocol's research budget allows, so the budget ends research
  and the finalization stage asks for the answer; the script's `finalization` field is what the model answers
  then.
* `scripts/shell/<task>.json`, the episode for Claude Code and Codex: the same calls as `omnidr-skill`
  commands in the shell, then `omnidr-skill answer submit "..."` and a final message.

The episodes are what the demo shows, not a model's work: three answer correctly (one of them only in
finalization) and the calculator episode answers wrong on purpose, taking C14's value from the revision-A
bulletin (SB-112) without looking up the unit's serial number, so that the demo's accuracy is not 100 %.
Every argument that names a page is a URL of the snapshot's web corpus, so replay serves it; a download lands
in /output/artifacts/ under the last segment of its URL path.
"""

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
MODEL = "scripted-demo"
ARTIFACTS = "/output/artifacts"

# Each tool's command line (the CLI forms fixed for issue 18): `omnidr-skill SKILL ACTION`, the arguments given
# as positional words in this order, every other argument as `--flag VALUE`.
TOOL_COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "search_web": ("search web", ("query",)),
    "fetch_url": ("fetch url", ("url",)),
    "download_file": ("download get", ("url",)),
    "read_artifact": ("artifact read", ("path",)),
    "sample_video": ("video sample", ()),
    "read_subtitles": ("video subtitles", ()),
    "browser_open": ("browser open", ("url",)),
    "browser_click": ("browser click", ("target",)),
    "browser_fill": ("browser fill", ("selector", "value")),
    "browser_submit": ("browser submit", ("selector",)),
    "browser_read": ("browser read", ()),
}


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Round:
    """One assistant turn: an optional note, then its tool calls."""

    note: str | None
    calls: tuple[Call, ...]


@dataclass(frozen=True)
class Episode:
    task: str
    match: str  # a phrase of the task's question, found in the instruction the agent gets
    rounds: tuple[Round, ...]
    answer: str  # the final message, the submitted answer, or (keeps_going) the finalization answer
    keeps_going: tuple[Round, ...] = ()  # cross-checks after the research, repeated `repeat` times
    repeat: int = 0


def artifact(url: str) -> str:
    """Where download_file puts `url`: /output/artifacts/ and the last segment of the URL's path."""
    return f"{ARTIFACTS}/{url.split('?', 1)[0].rstrip('/').rsplit('/', 1)[-1]}"


def r(note: str | None, *calls: Call) -> Round:
    return Round(note, calls)


def watch(count: int = 10) -> Round:
    return r("The video first: frames across the whole clip and its subtitles.",
             Call("sample_video", {"count": count}), Call("read_subtitles"))


RIVER_API = "https://data.example-rivers.org/api/v1/annual-maxima.csv?station=KR-417"
MUSEUM_REPORT = "https://www.example-harbour-museum.org/archive/annual-report-1893.pdf"
AUCTION_2023 = "https://www.example-highlandcup.org/auctions/2023"
RESULTS_ZIP = "https://www.example-highlandcup.org/files/highland-cup-2023-results.zip"
BULLETIN_A = "https://www.example-tellmark.com/support/bulletins/sb-112.pdf"

EPISODES = (
    Episode(
        task="river-gauge-flood",
        match="stops at a water-level gauge on a footbridge",
        rounds=(
            watch(),
            r("The gauge plate reads KR-417. Looking for the agency that runs it.",
              Call("search_web", {"query": "river gauge KR-417"})),
            r("The agency's gauge finder takes the plate's code.",
              Call("browser_open", {"url": "https://www.example-rivers.org/gauges/"})),
            r(None, Call("browser_fill", {"selector": "#code", "value": "KR-417"})),
            r(None, Call("browser_submit", {"selector": "#gauge-search"})),
            r("KR-471 is the weir gauge, a different one; opening KR-417.",
              Call("browser_click", {"target": "Kessel River at Ormby Footbridge"})),
            r(None, Call("browser_read")),
            r("It was moved to the footbridge in 2011; its annual maxima come from the data API.",
              Call("fetch_url", {"url": "https://data.example-rivers.org/api/v1/"})),
            r("Querying the annual maxima of KR-417.", Call("download_file", {"url": RIVER_API})),
            r(None, Call("read_artifact", {"path": artifact(RIVER_API), "where": "year=2011"})),
        ),
        answer="The gauge recorded its highest water level of that year on 2011-01-14.",
    ),
    Episode(
        task="astrolabe-donor",
        match="In what year was the firm that gave it founded",
        rounds=(
            watch(),
            r("The label gives inventory number HM 1893.214.",
              Call("search_web", {"query": "brass astrolabe HM 1893.214"})),
            r(None, Call("fetch_url", {"url": "https://collection.example-harbour-museum.org/objects/HM-1893-214"})),
            r("The donor is named in the annual report for 1893.", Call("download_file", {"url": MUSEUM_REPORT})),
            r(None, Call("read_artifact", {"path": artifact(MUSEUM_REPORT)})),
            r("Presented by Renwick & Hale, instrument makers (not Renwick & Hall, the opticians).",
              Call("search_web", {"query": "Renwick & Hale instrument makers"})),
            r(None, Call("fetch_url", {"url": "https://www.example-instrument-makers.org/makers/renwick-hale"})),
        ),
        answer="The astrolabe was given by Renwick & Hale, a firm founded in 1841.",
    ),
    Episode(
        task="coffee-lot-buyer",
        match="bought the coffee lot presented in the video",
        rounds=(
            watch(),
            r("Lot 27, Finca Los Alisos, at the 2023 Highland Cup.",
              Call("search_web", {"query": "Highland Cup 2023 auction results"})),
            r(None, Call("fetch_url", {"url": AUCTION_2023})),
            r("The buyers are in the results archive.", Call("download_file", {"url": RESULTS_ZIP})),
            r(None, Call("read_artifact", {"path": artifact(RESULTS_ZIP)})),
            r(None, Call("read_artifact", {"path": artifact(RESULTS_ZIP), "member": "results-2023.csv",
                                           "where": "lot=27"})),
        ),
        keeps_going=(
            r("Cross-checking the buyer of lot 27 against every other source before answering.",
              Call("search_web", {"query": "Harbourline Roasters Highland Cup"}),
              Call("search_web", {"query": "Finca Los Alisos lot 27 buyer"}),
              Call("search_web", {"query": "Highland Cup lot 27"}),
              Call("fetch_url", {"url": "https://www.example-highlandcup.org/auctions/2022"}),
              Call("fetch_url", {"url": "https://www.example-coffeewire.com/2023/05/13/highland-cup-record-price"}),
              Call("fetch_url", {"url": AUCTION_2023}),
              Call("read_artifact", {"path": artifact(RESULTS_ZIP), "member": "README.txt"}),
              Call("read_artifact", {"path": artifact(RESULTS_ZIP), "member": "results-2023.csv",
                                     "where": "buyer=Harbourline Roasters"}),
              Call("read_artifact", {"path": artifact(RESULTS_ZIP), "member": "results-2023.csv",
                                     "where": "farm=Finca Los Alisos"})),
        ),
        repeat=12,
        answer="Lot 27 from Finca Los Alisos was bought by Harbourline Roasters.",
    ),
    Episode(
        task="calculator-capacitor",
        match="what capacitance should capacitor C14",
        rounds=(
            watch(),
            r("A Tellmark HX-38 whose capacitor C14 is bulging.",
              Call("search_web", {"query": "Tellmark HX-38 service bulletin"})),
            r(None, Call("fetch_url", {"url": "https://www.example-tellmark.com/support/hx-38"})),
            r("Bulletin SB-112 is about C14.", Call("download_file", {"url": BULLETIN_A})),
            r(None, Call("read_artifact", {"path": artifact(BULLETIN_A)})),
        ),
        answer="The service bulletin specifies 470 \u00b5F for C14.",  # wrong on purpose: SB-131 applies (680 µF)
    ),
)


def _research(episode: Episode, cross_checks: int) -> list[Round]:
    return [*episode.rounds, *[rnd for _ in range(cross_checks) for rnd in episode.keeps_going]]


def chat_script(episode: Episode) -> dict:
    """The reference agent's chat script of `episode` (the format of `sandbox.scripted_model`)."""
    steps: list[dict] = []
    n = 0
    for rnd in _research(episode, episode.repeat):
        calls = []
        for c in rnd.calls:
            n += 1
            calls.append({"id": f"call{n}", "name": c.name, "arguments": c.arguments})
        steps.append({"content": rnd.note, "tool_calls": calls} if rnd.note else {"tool_calls": calls})
    script: dict = {"task": episode.task, "match": episode.match, "model": MODEL, "steps": steps}
    if episode.keeps_going:
        script["finalization"] = episode.answer
    else:
        steps.append({"content": episode.answer, "final": True})
    return script


def command(call: Call) -> str:
    """`call` as the `omnidr-skill` command line that does the same."""
    words, positional = TOOL_COMMANDS[call.name]
    line = ["omnidr-skill", *words.split()]
    line += [shlex.quote(str(call.arguments[p])) for p in positional if p in call.arguments]
    line += [f"--{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in call.arguments.items() if k not in positional]
    return " ".join(line)


def shell_episode(episode: Episode) -> dict:
    """The CLI harnesses' shell episode of `episode`: the research in the shell (one round of cross-checks at
    most: a CLI has no finalization stage here), then `omnidr-skill answer submit`."""
    steps: list[dict] = []
    for rnd in _research(episode, min(episode.repeat, 1)):
        step: dict = {"content": rnd.note} if rnd.note else {}
        step["commands"] = [{"command": command(c), "description": c.name.replace("_", " ").capitalize()}
                            for c in rnd.calls]
        steps.append(step)
    steps.append({"commands": [{"command": f"omnidr-skill answer submit {shlex.quote(episode.answer)}",
                                "description": "Submit the answer"}]})
    steps.append({"content": episode.answer, "final": True})
    return {"task": episode.task, "match": episode.match, "model": MODEL,
            "note": "A scripted demonstration of the sandbox machinery, not a model's work.", "steps": steps}


def main(snapshot: Path) -> None:
    tasks = json.loads((snapshot / "snapshot.json").read_text("utf-8"))["tasks"]
    by_task = {e.task: e for e in EPISODES}
    if sorted(tasks) != sorted(by_task):
        raise SystemExit(f"{snapshot}: tasks {sorted(tasks)} differ from the episodes {sorted(by_task)}")
    (HERE / "scripts" / "shell").mkdir(parents=True, exist_ok=True)
    for task_id in tasks:
        episode = by_task[task_id]
        question = json.loads((snapshot / "tasks" / task_id / "task.json").read_text("utf-8"))["question"]
        if episode.match not in question:
            raise SystemExit(f"{task_id}: the match {episode.match!r} is not in the question")
        for folder, data in ((HERE / "scripts", chat_script(episode)), (HERE / "scripts" / "shell", shell_episode(episode))):
            (folder / f"{task_id}.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", "utf-8")
            print(f"{(folder / task_id).relative_to(HERE)}.json: {len(data['steps'])} steps")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "snapshots/demo-opends"))
