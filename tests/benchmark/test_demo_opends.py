"""The bundled OpenDS-World demo (snapshots/demo-opends): it loads and validates clean, each answer sits only at
the end of its evidence path, the offline search finds each path's first page from the video's clue, and its
media script is deterministic."""

import hashlib
import html
import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from testkit import DEMO_OPENDS, ROOT

from omnidr.benchmark import ShortAnswerProtocol, duration_group, validate_snapshot
from omnidr.benchmark import TaskFormat as TaskKind
from omnidr.harness._reference import search_index
from sandbox.skills import SearchIndex

# The evidence path of each task, as the demo was built: the clue the anchor video gives (on screen and in its
# subtitle track), then the corpus pages in order; the answer is in the last one only (member: inside a ZIP).
PATHS = {
    "river-gauge-flood": ("KR-417", [
        "https://www.example-rivers.org/gauges/",
        "https://www.example-rivers.org/gauges/search?code=KR-417",
        "https://www.example-rivers.org/gauges/station/2207",
        "https://data.example-rivers.org/api/v1/",
        "https://data.example-rivers.org/api/v1/annual-maxima.csv?station=KR-417",
    ]),
    "astrolabe-donor": ("HM 1893.214", [
        "https://collection.example-harbour-museum.org/objects/HM-1893-214",
        "https://www.example-harbour-museum.org/archive/annual-report-1893.pdf",
        "https://www.example-instrument-makers.org/makers/renwick-hale",
    ]),
    "coffee-lot-buyer": ("Lot 27", [
        "https://www.example-highlandcup.org/auctions/2023",
        "https://www.example-highlandcup.org/files/highland-cup-2023-results.zip",
    ]),
    "calculator-capacitor": ("38-20417", [
        "https://www.example-tellmark.com/support/hx-38",
        "https://www.example-tellmark.com/support/serial?sn=38-20417",
        "https://www.example-tellmark.com/support/bulletins/sb-131.pdf",
    ]),
}
FIRST_QUERY = {  # what a model would search for from the video (the scripted episodes' first search)
    "river-gauge-flood": "river gauge KR-417",
    "astrolabe-donor": "brass astrolabe HM 1893.214",
    "coffee-lot-buyer": "Highland Cup 2023 auction results",
    "calculator-capacitor": "Tellmark HX-38 service bulletin",
}
_PDF_TEXT = re.compile(rb"\(((?:\\.|[^\\)])*)\) Tj")


def corpus_text(path: Path) -> str:
    """The text a reader gets from a corpus file: HTML with entities resolved, a PDF's text strings, a ZIP's
    members, CSV as it is."""
    data = path.read_bytes()
    if path.suffix == ".pdf":
        return "\n".join(re.sub(rb"\\(.)", rb"\1", m).decode("latin-1") for m in _PDF_TEXT.findall(data))
    if path.suffix == ".zip":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return "\n".join(z.read(name).decode("utf-8") for name in z.namelist())
    text = data.decode("utf-8")
    return html.unescape(text) if path.suffix == ".html" else text


@pytest.fixture(scope="module")
def report():
    return validate_snapshot(DEMO_OPENDS)


def test_the_demo_loads_and_validates_with_no_problem(report):
    assert report.problems == []
    snap = report.snapshot
    assert snap.kind is TaskKind.short_answer and snap.protocol == ShortAnswerProtocol()
    tasks = [b.question for b in snap.tasks.values()]
    assert len(tasks) == 4 and all(t is not None for t in tasks)
    assert len({t.domain for t in tasks}) == 4
    assert {"html", "pdf", "csv", "zip"} <= {c for t in tasks for c in t.format_categories}
    assert all(duration_group(t.video.duration_s) == "<2 min" and 20 <= t.video.duration_s <= 60 for t in tasks)
    types = {p.content_type.split(";")[0] for p in snap.corpus.pages}
    assert {"text/html", "application/pdf", "text/csv", "application/zip"} <= types
    assert any("?" in p.url for p in snap.corpus.pages)  # the result page of a GET form or query
    size = sum(f.stat().st_size for f in DEMO_OPENDS.rglob("*") if f.is_file())
    assert size < 2_000_000


def test_each_answer_is_stated_once_at_the_end_of_its_path_and_nowhere_else(report):
    snap = report.snapshot
    pages = {p.url: p for p in snap.corpus.pages}
    texts = {p.path: corpus_text(DEMO_OPENDS / "web" / p.path) for p in snap.corpus.pages}
    assert set(PATHS) == set(snap.tasks)
    for task_id, (_clue, path) in PATHS.items():
        answer = snap.tasks[task_id].question.answer
        assert all(url in pages for url in path), task_id
        holding = [file for file, text in texts.items() if answer in text]
        assert holding == [pages[path[-1]].path], (task_id, holding)
        assert texts[holding[0]].count(answer) == 1
        assert len(path) >= 2 and all(answer not in texts[pages[url].path] for url in path[:-1])


def test_the_offline_search_finds_each_paths_first_page_from_the_videos_clue(report):
    snap = report.snapshot
    index = SearchIndex(search_index(snap.corpus.pages))
    for task_id, (clue, path) in PATHS.items():
        assert index.search(FIRST_QUERY[task_id])[0]["url"] == path[0], task_id
        # a query's result page is reached by submitting its form, never by a search for the clue
        found = {hit["url"] for hit in index.search(clue)} | {hit["url"] for hit in index.search(FIRST_QUERY[task_id])}
        assert not [url for url in found if "?" in url], task_id


@pytest.mark.media
def test_each_video_carries_its_clue_on_its_subtitle_track(report):
    for task_id, (clue, _path) in PATHS.items():
        video = DEMO_OPENDS / "tasks" / task_id / "video.mp4"
        srt = subprocess.run(["ffmpeg", "-v", "error", "-i", str(video), "-map", "0:s:0", "-f", "srt", "-"],
                             capture_output=True, text=True, check=True).stdout
        assert clue in srt, (task_id, srt)


def _generate(folder: Path) -> dict[str, str]:
    subprocess.run([sys.executable, str(ROOT / "snapshots" / "make_demo_opends_media.py"), "--snapshot", str(folder)],
                   check=True, capture_output=True, timeout=600)
    return {f.relative_to(folder).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(folder.rglob("*")) if f.is_file()}


@pytest.mark.media
def test_the_media_script_is_deterministic_and_makes_the_committed_files(tmp_path):
    first, second = _generate(tmp_path / "a"), _generate(tmp_path / "b")
    assert first == second and len(first) == 10
    tasks = {t: json.loads((DEMO_OPENDS / "tasks" / t / "task.json").read_text("utf-8")) for t in PATHS}
    assert {f"tasks/{t}/video.mp4" for t in tasks} <= set(first)
    for rel, digest in first.items():  # what is not a video depends on Python alone: byte for byte the committed file
        if not rel.endswith(".mp4"):
            assert hashlib.sha256((DEMO_OPENDS / rel).read_bytes()).hexdigest() == digest, rel


def test_a_missing_video_points_at_the_demos_own_media_script(tmp_path):
    snapshots = tmp_path / "snapshots"
    shutil.copytree(DEMO_OPENDS, snapshots / "demo-opends")
    shutil.copy2(ROOT / "snapshots" / "make_demo_opends_media.py", snapshots / "make_demo_opends_media.py")
    (snapshots / "demo-opends" / "tasks" / "coffee-lot-buyer" / "video.mp4").unlink()
    errors = validate_snapshot(snapshots / "demo-opends").errors
    assert [e.path for e in errors] == ["video.file"]
    assert f"python3 {snapshots / 'make_demo_opends_media.py'}" in errors[0].message
