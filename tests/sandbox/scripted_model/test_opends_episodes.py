"""The scripted model's episodes for the OpenDS-World demo (snapshots/demo-opends): each plays from an instruction
that holds its task's question, every page it opens, submits, clicks, fetches or downloads is one that replay
serves from the demo's corpus, and their answers give the demo a real split (3 of 4 correct, one of them in
finalization after the research budget ran out)."""

import json
import shlex
from html.parser import HTMLParser
from urllib.parse import urlencode, urljoin

import pytest
from testkit import DEMO_OPENDS

from omnidr.benchmark import ShortAnswerProtocol, open_snapshot
from omnidr.evaluation._answer_baseline import baseline_answer_verdict
from sandbox.egress import ReplayCorpus
from sandbox.scripted_model import answer, load_scripts
from sandbox.scripted_model._episodes import load_episodes, messages_answer
from sandbox.scripted_model._server import SCRIPTS_DIR

TOOLS = ("sample_video", "read_subtitles", "search_web", "fetch_url", "browser_open", "browser_fill", "browser_submit",
         "browser_click", "browser_read", "download_file", "read_artifact")
# The CLI forms fixed for the issue: `omnidr-skill SKILL ACTION` -> the tool and its positional arguments.
SHELL = {("search", "web"): ("search_web", ["query"]), ("fetch", "url"): ("fetch_url", ["url"]),
         ("download", "get"): ("download_file", ["url"]), ("artifact", "read"): ("read_artifact", ["path"]),
         ("video", "sample"): ("sample_video", []), ("video", "subtitles"): ("read_subtitles", []),
         ("browser", "open"): ("browser_open", ["url"]), ("browser", "click"): ("browser_click", ["target"]),
         ("browser", "fill"): ("browser_fill", ["selector", "value"]),
         ("browser", "submit"): ("browser_submit", ["selector"]), ("browser", "read"): ("browser_read", [])}


@pytest.fixture(scope="module")
def snap():
    return open_snapshot(DEMO_OPENDS)


@pytest.fixture(scope="module")
def corpus():
    return ReplayCorpus(DEMO_OPENDS / "web")


def _instruction(question: str) -> str:
    return f"Answer the question about the video at /input/video.mp4.\n\nQuestion: {question}\n"


def _chat(task: str) -> dict:
    return json.loads((SCRIPTS_DIR / f"{task}.json").read_text("utf-8"))


def _shell(task: str) -> dict:
    return json.loads((SCRIPTS_DIR / "shell" / f"{task}.json").read_text("utf-8"))


def _chat_calls(script: dict) -> list[tuple[str, dict]]:
    return [(c["name"], c["arguments"]) for step in script["steps"] for c in step.get("tool_calls", [])]


def _shell_calls(episode: dict) -> list[tuple[str, dict]]:
    """The tool each `omnidr-skill` command of the episode stands for, with its arguments."""
    out = []
    for step in episode["steps"]:
        for c in step.get("commands", []):
            words = shlex.split(c["command"])
            assert words[0] == "omnidr-skill", c["command"]
            if words[1:3] == ["answer", "submit"]:
                continue
            name, positional = SHELL[(words[1], words[2])]
            rest, args = words[3:], {}
            while rest and not rest[0].startswith("--"):
                args[positional[len(args)]] = rest.pop(0)
            while rest:
                flag, value = rest.pop(0), rest.pop(0)
                args[flag[2:].replace("-", "_")] = value
            out.append((name, args))
    return out


class _Page(HTMLParser):
    """The forms (with their inputs, in document order) and links of a page, as a browser sees them."""

    def __init__(self, text: str):
        super().__init__()
        self.forms: list[dict] = []
        self.links: list[list[str]] = []
        self._link: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"id": a.get("id"), "action": a.get("action", ""), "method": a.get("method", "get"),
                               "inputs": []})
        elif tag == "input" and self.forms and a.get("name"):
            self.forms[-1]["inputs"].append(a)
        elif tag == "a" and a.get("href"):
            self._link = [a["href"], ""]

    def handle_data(self, data):
        if self._link is not None:
            self._link[1] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._link is not None:
            self.links.append(self._link)
            self._link = None


def _browse(calls: list[tuple[str, dict]], corpus: ReplayCorpus) -> list[str]:
    """Follow the episode's page-level calls as replay would serve them; returns every URL it reached. A form is
    submitted the way a browser does (GET, its named inputs in order, the filled values)."""
    reached: list[str] = []

    def serve(url: str) -> str:
        found = corpus.lookup(url)
        assert found is not None, f"replay has no page for {url}"
        reached.append(url)
        return url

    current, filled = None, {}
    for name, args in calls:
        if name in ("fetch_url", "download_file"):
            serve(args["url"])
        elif name == "browser_open":
            current, filled = serve(args["url"]), {}
        elif name == "browser_fill":
            filled[args["selector"]] = args["value"]
        elif name in ("browser_submit", "browser_click"):
            assert current is not None
            page = _Page(corpus.lookup(current)[1].read_text("utf-8"))
            if name == "browser_click":
                href = next(h for h, text in page.links if " ".join(text.split()) == args["target"])
                current = serve(urljoin(current, href))
                continue
            form = next(f for f in page.forms if args.get("selector") in (None, f"#{f['id']}"))
            assert form["method"].lower() == "get"
            fields = [(i["name"], filled.get(f"#{i.get('id')}", i.get("value", ""))) for i in form["inputs"]]
            current, filled = serve(urljoin(current, form["action"]) + "?" + urlencode(fields)), {}
    return reached


def test_every_page_an_episode_reaches_is_served_by_replay(snap, corpus):
    for task_id in snap.tasks:
        for calls in (_chat_calls(_chat(task_id)), _shell_calls(_shell(task_id))):
            reached = _browse(calls, corpus)
            assert reached, task_id
    # the form submissions land on the result pages of the corpus
    river = _browse(_chat_calls(_chat("river-gauge-flood")), corpus)
    assert "https://www.example-rivers.org/gauges/search?code=KR-417" in river
    assert "https://data.example-rivers.org/api/v1/annual-maxima.csv?station=KR-417" in river


def _play(question: str) -> tuple[str, int]:
    """The reference agent's side against the scripted model: every tool offered, each call answered with an
    empty result, until a message without tool calls; returns its content and the number of tool calls."""
    scripts = load_scripts()
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in TOOLS]
    messages: list[dict] = [{"role": "user", "content": _instruction(question)}]
    calls = 0
    for _ in range(400):
        message = answer({"messages": messages, "tools": tools}, scripts)["choices"][0]["message"]
        if not message.get("tool_calls"):
            return message["content"], calls
        messages.append(message)
        for c in message["tool_calls"]:
            calls += 1
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": "{}"})
    raise AssertionError("the script never stops")


def test_the_episodes_answer_three_of_four_one_in_finalization(snap):
    budget = ShortAnswerProtocol().research_tool_calls
    verdicts = {}
    for task_id, bundle in snap.tasks.items():
        task, script = bundle.question, _chat(task_id)
        assert sum(script["match"] in b.question.question for b in snap.tasks.values()) == 1
        content, calls = _play(task.question)
        if "finalization" in script:  # never answers during research: the call budget ends it first
            assert calls > budget and not any("final" in s for s in script["steps"])
            delivered = script["finalization"]
        else:
            assert content == script["steps"][-1]["content"] and calls <= budget
            delivered = content
        submit = shlex.split(_shell(task_id)["steps"][-2]["commands"][0]["command"])
        assert submit[:3] == ["omnidr-skill", "answer", "submit"] and submit[3] == delivered
        verdicts[task_id] = baseline_answer_verdict(task.question, task.answer, delivered).correct
    assert verdicts == {"river-gauge-flood": True, "astrolabe-donor": True, "coffee-lot-buyer": True,
                        "calculator-capacitor": False}


def test_claude_code_plays_the_shell_episode_of_the_question(snap):
    episodes = load_episodes(SCRIPTS_DIR)
    question = snap.tasks["calculator-capacitor"].question.question
    body = {"model": "m", "messages": [{"role": "user", "content": _instruction(question)}],
            "tools": [{"name": "Bash", "input_schema": {}}]}
    first = messages_answer(body, episodes)["content"]
    bash = [b for b in first if b["type"] == "tool_use"]
    assert bash and bash[0]["name"] == "Bash" and bash[0]["input"]["command"].startswith("omnidr-skill video sample")
