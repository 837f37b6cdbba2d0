"""The research skills on the host: `omnidr-skill` (python -m sandbox.skills) as a CLI harness's shell runs
it, the files generated from the manifests, and the capability ladder's gating. Web pages come from a
loopback server holding the demo corpus's files."""

import json
import os
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from testkit import DEMO, ROOT

from sandbox.reference_agent._capability import capability
from sandbox.reference_agent._tools import ToolBox
from sandbox.skills import LEVELS, SKILLS, skill_md, skills_at, tool_schemas

PENDANT = DEMO / "tasks" / "pendant-lamp-safety" / "video.mp4"
PAGE = "www.example-standards.org/safety/test-before-touch.html"
PDF = "www.example-northbeam-lighting.com/datasheets/orla-12-datasheet-rev-b.pdf"


@pytest.fixture(scope="module")
def corpus_server():
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    def guess_type(self, path):  # the corpus's files keep their URL paths, without extensions for HTML
        return "application/pdf" if str(path).endswith(".pdf") else "text/html; charset=utf-8"

    Quiet.guess_type = guess_type
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(DEMO / "web")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def skill(tmp_path: Path, level: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(OMNIDR_CAPABILITY=level, OMNIDR_VIDEO=str(PENDANT), OMNIDR_REPORT_DIR=str(tmp_path / "report"),
               OMNIDR_CONTRACT=str(DEMO / "contract"), OMNIDR_SKILL_STATE=str(tmp_path / "state"),
               OMNIDR_SKILL_BUDGETS="web=2,video=0,document=1,anchor=1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "sandbox.skills", *args], env=env, capture_output=True, text=True,
                          input=stdin, timeout=120)


def calls(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "state" / "calls.jsonl").read_text().splitlines()]


def test_each_level_installs_the_skills_of_the_ladder():
    names = {level: [s.name for s in skills_at(level)] for level in LEVELS}
    assert names == {
        "interface_only": ["report"],
        "video": ["report", "video"],
        "text_web": ["report", "video", "search", "fetch", "evidence"],
        "multimodal": ["report", "video", "search", "fetch", "doc", "media", "download", "artifact", "browser",
                       "evidence"],
        "full": ["report", "video", "search", "fetch", "doc", "media", "download", "artifact", "browser", "evidence",
                 "research"],
    }  # download, artifact and browser: OpenDS-World's environment (paper 002, App. C.1), for both task kinds
    search = next(s for s in SKILLS if s.name == "search")
    assert "omnidr-skill search web QUERY" in skill_md(search, "text_web")
    assert "search videos" not in skill_md(search, "text_web") and "search videos" in skill_md(search, "multimodal")
    assert skill_md(search, "full").startswith("---\nname: omnidr-search\ndescription: Search the web")


def test_the_reference_agent_gets_its_tools_from_the_same_manifests(tmp_path):
    for level in LEVELS:
        box = ToolBox(capability(level), str(PENDANT), tmp_path / "report", DEMO / "contract")
        names = [t["function"]["name"] for t in box.schemas()]
        assert names == [t["function"]["name"] for t in tool_schemas(level)]
    assert [t["function"]["name"] for t in tool_schemas("video")] == [
        "write_report", "check_report", "probe_video", "read_window"]
    full = {t["function"]["name"]: t for t in tool_schemas("full")}
    assert full["search_web"]["function"]["parameters"]["properties"]["kind"]["enum"][-1] == "image"
    assert "kind" not in {t["function"]["name"]: t for t in tool_schemas("text_web")}["search_web"][
        "function"]["parameters"]["properties"]


def test_install_writes_the_skill_files_of_the_level(tmp_path):
    r = skill(tmp_path, "video", "install", "--claude-code", str(tmp_path / "cc"), "--codex", str(tmp_path / "cx"),
              "--agents-md", str(tmp_path / "AGENTS.md"))
    assert r.returncode == 0, r.stderr
    assert sorted(p.parent.name for p in (tmp_path / "cc").glob("*/SKILL.md")) == ["omnidr-report", "omnidr-video"]
    assert (tmp_path / "cc" / "omnidr-video" / "SKILL.md").read_text() == (
        tmp_path / "cx" / "omnidr-video" / "SKILL.md").read_text()
    agents = (tmp_path / "AGENTS.md").read_text()
    assert "omnidr-skill video frames --window WINDOW [--count COUNT]" in agents and "omnidr-skill search" not in agents
    assert skill(tmp_path, "video", "install").returncode == 2


@pytest.mark.media
def test_video_skills_write_frames_and_read_the_transcript(tmp_path):
    r = skill(tmp_path, "video", "video", "frames", "--window", "0", "--count", "3")
    assert r.returncode == 0, r.stderr
    frames = json.loads(r.stdout)["frames"]
    assert [f["time_s"] for f in frames] == [6.0, 18.0, 30.0]
    assert all((tmp_path / "report" / f["src"]).read_bytes()[:2] == b"\xff\xd8" for f in frames)  # JPEG files
    t = json.loads(skill(tmp_path, "video", "video", "transcript", "--window", "0").stdout)
    assert t["transcript_source"] == "subtitle_track" and t["transcript"][0]["text"].startswith("Today we hang")
    bad = skill(tmp_path, "video", "video", "frames", "--window", "3")
    assert bad.returncode == 1 and bad.stderr.strip() == ("omnidr-skill video frames: window 3 does not exist; the "
                                                          "video has 1 window(s) of 300 s")
    assert [(c["skill"], c["action"], c["phase"], c["exit"]) for c in calls(tmp_path)] == [
        ("video", "frames", "video", 0), ("video", "transcript", "video", 0), ("video", "frames", "video", 1)]


def test_a_skill_above_the_level_fails_as_a_missing_command(tmp_path):
    r = skill(tmp_path, "interface_only", "video", "probe")
    assert r.returncode == 127 and r.stdout == ""
    assert r.stderr.strip() == ("omnidr-skill video probe: `video probe` is not installed at capability "
                                "interface_only (it needs video)")
    assert skill(tmp_path, "video", "video", "frames").returncode == 2  # usage: --window is required
    wrong = skill(tmp_path, "video", "search", "web", "q")
    assert wrong.returncode == 127 and "needs text_web" in wrong.stderr


@pytest.mark.media
@pytest.mark.network  # pages come from the loopback corpus server
def test_web_evidence_and_report_skills_share_one_state(tmp_path, corpus_server):
    page, pdf = f"{corpus_server}/{PAGE}", f"{corpus_server}/{PDF}"
    opened = skill(tmp_path, "text_web", "fetch", "url", page)
    assert opened.returncode == 0, opened.stderr
    title = "Safe isolation: test before you touch - Home Wiring Standards Board"
    assert json.loads(opened.stdout)["title"] == title
    refused = skill(tmp_path, "text_web", "fetch", "url", pdf)  # documents are multimodal retrieval
    assert refused.returncode == 127 and "is a document" in refused.stderr
    assert skill(tmp_path, "text_web", "doc", "read", pdf).returncode == 127
    doc = skill(tmp_path, "multimodal", "doc", "read", pdf)
    assert doc.returncode == 0 and "Orla 12" in json.loads(doc.stdout)["text"]
    not_opened = skill(tmp_path, "text_web", "evidence", "add", "--claim", "c", "--modality", "web", "--excerpt", "x",
                       "--source-url", f"{corpus_server}/elsewhere")
    assert not_opened.returncode == 1 and "has not been opened successfully" in not_opened.stderr
    excerpt = json.loads(opened.stdout)["text"].split("\n")[1][:60]
    added = skill(tmp_path, "text_web", "evidence", "add", "--claim", "test first", "--modality", "web",
                  "--excerpt", excerpt, "--source-url", page, "--relation", "support", "--anchor", "A1")
    assert json.loads(added.stdout) == {"id": "E1", "verification": "excerpt_verified", "evidence_count": 1}
    [record] = json.loads(skill(tmp_path, "text_web", "evidence", "list").stdout)["evidence"]
    assert (record["source_url"], record["title"]) == (page, title)
    data = {"title": "t", "language": "en", "query": "q", "overview": "o", "video": {"src": "video.mp4"},
            "timeline": [], "anchors": [], "findings": [],
            "sources": [{"id": "S1", "type": "web", "url": page, "title": "t", "quote": excerpt},
                        {"id": "S2", "type": "web", "url": f"{corpus_server}/never-opened", "title": "n"}]}
    rendered = skill(tmp_path, "text_web", "report", "render", "--data", "-", stdin=json.dumps(data))
    assert rendered.returncode == 0, rendered.stderr
    out = json.loads(rendered.stdout)
    assert (tmp_path / "report" / "index.html").read_bytes() == (DEMO / "contract" / "template.html").read_bytes()
    assert out["check"]["problems"] == [f"sources[1] (S2): '{corpus_server}/never-opened' was not opened "
                                        "successfully in this run; fetch it or drop it"]
    status = json.loads(skill(tmp_path, "full", "research", "status").stdout)
    assert status["opened"] == {"web": 1, "video": 0, "document": 1, "image": 0}
    assert (status["records_per_anchor"], status["budgets"]) == ({"A1": 1}, {"web": 2, "video": 0, "document": 1,
                                                                             "anchor": 1})


DRIVER = r"""
import json, subprocess, sys
out = []
for args, stdin in json.loads(sys.argv[1]):
    done = subprocess.run(["omnidr-skill", *args], input=stdin, capture_output=True, text=True)
    out.append({"args": args, "exit": done.returncode, "stdout": done.stdout, "stderr": done.stderr})
print(json.dumps(out))
"""


@pytest.mark.docker
@pytest.mark.parametrize("image", [pytest.param(n, marks=pytest.mark.images(n))
                                   for n in ("reference", "claude-code", "codex")])
def test_every_skill_runs_in_every_agent_image(image, client, tmp_path):
    """Each skill, as a CLI harness's shell runs it, in each agent image; pages come from a corpus server
    container on a project network (the sandbox's proxy is tested elsewhere)."""
    import uuid

    from omnidr.images import build_images

    tags = {b.name: b.tag for b in build_images([image])}
    net = client.networks.create(f"omnidr-test-skills-{uuid.uuid4().hex[:8]}", labels={"org.omnidr.test": "1"})
    server = client.containers.run(tags["base"], ["python3", "-u", "-m", "http.server", "8000", "-d", "/web"],
                                   detach=True, network=net.name, labels={"org.omnidr.test": "1"},
                                   volumes={str(DEMO / "web"): {"bind": "/web", "mode": "ro"}})
    try:
        net.reload()
        net.disconnect(server)
        net.connect(server, aliases=["corpus"])
        deadline = time.monotonic() + 60  # listening before the skills fetch from it (a loaded host starts slowly)
        while b"Serving HTTP" not in server.logs(stdout=True, stderr=False):
            assert time.monotonic() < deadline, server.logs().decode()[-2000:]
            time.sleep(0.1)
        page, pdf = f"http://corpus:8000/{PAGE}", f"http://corpus:8000/{PDF}"
        excerpt = "Prove the tester on a known live source"
        data = {"title": "t", "language": "en", "query": "q", "overview": "o", "video": {"src": "video.mp4"},
                "timeline": [{"id": "T1", "start_s": 0, "end_s": 36, "title": "t", "note": "n",
                              "media": [{"type": "image", "src": "assets/w000_00.jpg"}]}],
                "anchors": [], "findings": [], "sources": [{"id": "S1", "type": "web", "url": page, "title": "t"}]}
        steps = [(["list"], None), (["video", "probe"], None), (["video", "windows"], None),
                 (["video", "frames", "--window", "0", "--count", "2"], None),
                 (["video", "transcript", "--window", "0"], None), (["video", "read", "--index", "0"], None),
                 (["video", "transcript", "--source", "captions"], None),
                 (["search", "web", "safe isolation"], None), (["search", "documents", "Orla 12 data sheet"], None),
                 (["fetch", "url", page], None), (["doc", "read", pdf], None), (["media", "download", pdf], None),
                 (["evidence", "add", "--claim", "c", "--modality", "web", "--source-url", page, "--excerpt", excerpt],
                  None),
                 (["evidence", "list"], None), (["research", "status"], None),
                 (["report", "render", "--data", "-"], json.dumps(data)), (["report", "check"], None),
                 # OpenDS-World's tools: the interval reader, downloads and their readers, Chromium
                 (["video", "sample", "--count", "3"], None), (["video", "subtitles", "--start", "6", "--end", "12"], None),
                 (["download", "get", pdf], None), (["artifact", "read", "orla-12-datasheet-rev-b.pdf"], None),
                 (["browser", "open", page], None), (["browser", "close"], None)]
        index = {"pages": [{"url": page, "title": "Safe isolation: test before you touch"},
                           {"url": pdf, "title": "Orla 12 Glass Pendant - Product Data Sheet", "content_type":
                            "application/pdf"}]}
        out = tmp_path / "out"
        out.mkdir()
        out.chmod(0o777)  # the agent runs as uid 1000
        captions = tmp_path / "video.en.vtt"  # a track fetched with the video (yt-dlp, WebVTT)
        captions.write_text("WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nTest before you touch\n", "utf-8")
        captions.chmod(0o644)
        logs = client.containers.run(
            tags[image], ["python3", "-c", DRIVER, json.dumps(steps)], remove=True, network=net.name, user="1000:1000",
            entrypoint=[], environment={"OMNIDR_CAPABILITY": "full", "OMNIDR_VIDEO": "/input/video.mp4",
                                        "OMNIDR_REPORT_DIR": "/out/report", "OMNIDR_CONTRACT": "/input/contract",
                                        "OMNIDR_SKILL_STATE": "/out/skills", "OMNIDR_SEARCH_INDEX": json.dumps(index),
                                        "OMNIDR_CAPTIONS": "/input/video.en.vtt", "OMNIDR_ARTIFACTS_DIR": "/out/artifacts"},
            volumes={str(PENDANT): {"bind": "/input/video.mp4", "mode": "ro"}, str(captions): {
                         "bind": "/input/video.en.vtt", "mode": "ro"},
                     str(DEMO / "contract"): {"bind": "/input/contract", "mode": "ro"},
                     str(out): {"bind": "/out", "mode": "rw"}})
    finally:
        server.remove(force=True)
        net.remove()
    results = {" ".join(r["args"][:2]) + (" captions" if "captions" in r["args"] else ""): r for r in json.loads(logs)}
    assert {k: r["exit"] for k, r in results.items() if r["exit"]} == {}, {k: r["stderr"] for k, r in results.items() if r["exit"]}
    got = {k: json.loads(r["stdout"]) for k, r in results.items()}
    assert got["video probe"]["duration_s"] == 36.0 and got["video windows"]["windows"][0]["end_s"] == 36.0
    assert [f["src"] for f in got["video frames"]["frames"]] == ["assets/w000_00.jpg", "assets/w000_01.jpg"]
    assert got["video read"]["transcript"] == got["video transcript"]["transcript"] != []
    assert got["video transcript captions"] == {"transcript_source": "captions", "transcript": [
        {"start_s": 1.0, "end_s": 4.0, "text": "Test before you touch"}]}
    assert got["search web"]["results"][0]["url"] == page and got["search documents"]["results"][0]["url"] == pdf
    assert got["fetch url"]["status"] == 200 and "Orla 12" in got["doc read"]["text"]
    assert got["media download"]["src"].startswith("assets/media/")
    assert got["evidence add"]["verification"] == "excerpt_verified" and len(got["evidence list"]["evidence"]) == 1
    assert got["research status"]["opened"]["document"] == 1
    assert got["report render"]["check"]["ok"] and got["report check"]["ok"], got["report check"]
    assert (out / "report" / "data.js").is_file() and (out / "report" / "assets" / "w000_00.jpg").is_file()
    assert [f["time_s"] for f in got["video sample"]["frames"]] == [6.0, 18.0, 30.0]
    assert got["video subtitles"]["lines"][0]["timestamp"] == "00:00:06.200"
    assert got["download get"]["path"] == "/out/artifacts/orla-12-datasheet-rev-b.pdf"
    assert got["artifact read"]["pages"] == 1 and "Orla 12" in got["artifact read"]["text"]
    assert got["browser open"]["title"] == "Safe isolation: test before you touch - Home Wiring Standards Board"
    assert got["browser close"] == {"closed": True}
    assert len((out / "skills" / "calls.jsonl").read_text().splitlines()) == len(steps) - 1  # `list` logs nothing


def test_a_state_folder_that_cannot_be_written_is_one_line_not_a_traceback(tmp_path):
    (tmp_path / "state").write_text("a file where the state folder should be")
    r = skill(tmp_path, "video", "video", "windows")
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("omnidr-skill video windows: File exists"), r.stderr


def test_the_demo_web_is_not_the_answer_key_and_the_index_covers_all_of_it():
    """Distractors (off-topic, outdated, contradicting, low-authority pages, an image, related videos) sit
    beside the cited pages; the offline search door indexes the whole corpus, so the agent must choose."""
    from omnidr.harness._reference import search_index
    from sandbox.skills._web import SearchIndex

    pages = json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]
    cited = {s["url"] for f in DEMO.glob("tasks/*/facts.json") for fact in json.loads(f.read_text())["facts"]
             for s in fact.get("sources", [])}
    distractors = [p for p in pages if p["url"] not in cited]
    assert len(cited) == 21 and len(distractors) == 13
    assert {p["content_type"].split(";")[0] for p in distractors} == {"text/html", "image/png"}
    assert sum("/watch?v=" in p["url"] for p in distractors) == 3
    from sandbox.models import CorpusPage

    index = SearchIndex(search_index([CorpusPage(**p) for p in pages]))
    assert len(index.entries) == len(pages)
    top = index.search("pendant chain length")[0]["url"]
    assert top == "https://www.example-jewelry.com/guides/pendant-chain-length"  # a word in common, off topic
    assert "https://forum.example-diyers.net/t/do-i-really-need-a-fan-rated-box" in [
        r["url"] for r in index.search("rated box heavy pendant")]
    assert index.search("island pendants photo", "image")[0]["url"].endswith("island-pendants.png")


# ---- the short-answer delivery -------------------------------------------------------------------------------

def _answer_cli(tmp_path: Path, *args: str, kind: str | None = "short_answer") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k != "OMNIDR_TASK_KIND"}
    env.update(OMNIDR_CAPABILITY="interface_only", OMNIDR_OUTPUT_DIR=str(tmp_path / "output"),
               OMNIDR_SKILL_STATE=str(tmp_path / "state"), OMNIDR_REPORT_DIR=str(tmp_path / "output" / "report"),
               PYTHONPATH=str(ROOT), **({"OMNIDR_TASK_KIND": kind} if kind else {}))
    return subprocess.run([sys.executable, "-m", "sandbox.skills", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_answer_submit_writes_answer_json_and_refuses_an_empty_answer(tmp_path):
    from sandbox.models import AnswerFile

    done = _answer_cli(tmp_path, "answer", "submit", "  The bridge crosses the Vltava.  ")
    assert done.returncode == 0, done.stderr
    written = AnswerFile.model_validate_json((tmp_path / "output" / "answer.json").read_text())
    assert (written.answer, written.termination, written.source) == (
        "The bridge crosses the Vltava.", "complete_answer", "research")
    assert json.loads(done.stdout)["words"] == 5
    assert calls(tmp_path)[-1]["skill"] == "answer" and calls(tmp_path)[-1]["exit"] == 0

    empty = _answer_cli(tmp_path, "answer", "submit", "   ")
    assert empty.returncode == 2 and len(empty.stderr.strip().splitlines()) == 1
    assert "the answer is empty" in empty.stderr and "Traceback" not in empty.stderr
    assert AnswerFile.model_validate_json((tmp_path / "output" / "answer.json").read_text()) == written  # kept


def test_the_answer_skill_is_installed_for_short_answer_tasks_only(tmp_path):
    short = json.loads(_answer_cli(tmp_path, "list").stdout)
    report = json.loads(_answer_cli(tmp_path, "list", kind=None).stdout)
    assert "answer" in [s["skill"] for s in short["skills"]] and short["task_kind"] == "short_answer"
    assert "answer" not in [s["skill"] for s in report["skills"]] and report["task_kind"] == "report"
    answer = next(s for s in SKILLS if s.name == "answer")
    assert "omnidr-skill answer submit TEXT" in skill_md(answer, "interface_only", "short_answer")
    report_skills = {s.name for s in skills_at("full")}
    short_skills = {s.name for s in skills_at("full", "short_answer")}
    assert "report" in report_skills - short_skills and "answer" in short_skills - report_skills
