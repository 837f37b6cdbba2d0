"""OpenDS-World's tools as a CLI harness's shell runs them (paper 002, App. C.1): `download get` through a proxy,
`artifact list|read` by format (PDF pages, CSV rows, ZIP members, audio, video, images, HTML), the interval video
reader `video sample` and `video subtitles`, and the task kinds the skills serve. The web is a loopback server
that answers as a forward proxy for made-up hosts: a request reaches it only if the tool went through the proxy."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from testkit import DEMO, ROOT, ProxyWeb

from omnidr.benchmark._kinds import BUILT_KINDS
from sandbox.reference_agent._capability import capability
from sandbox.reference_agent._loop import frames_message
from sandbox.reference_agent._tools import ToolBox
from sandbox.skills import TASK_KINDS, skills_at, tool_schemas
from snapshots.make_demo_media import PdfDoc, write_pdf

PENDANT = DEMO / "tasks" / "pendant-lamp-safety" / "video.mp4"
HOST = "http://files.opends.test"


@pytest.fixture
def web():
    with ProxyWeb() as server:
        yield server


def skill(tmp_path: Path, *args: str, proxy: str | None = None, level: str = "multimodal",
          kind: str = "short_answer", video: Path = PENDANT, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    full.update(OMNIDR_CAPABILITY=level, OMNIDR_TASK_KIND=kind, OMNIDR_VIDEO=str(video),
                OMNIDR_REPORT_DIR=str(tmp_path / "report"), OMNIDR_CONTRACT=str(DEMO / "contract"),
                OMNIDR_SKILL_STATE=str(tmp_path / "state"), OMNIDR_ARTIFACTS_DIR=str(tmp_path / "artifacts"),
                OMNIDR_PROTOCOL=str(tmp_path / "no-protocol.json"), PYTHONPATH=str(ROOT))
    full.update(env)
    if proxy:
        full.update(HTTP_PROXY=proxy, HTTPS_PROXY=proxy)
    return subprocess.run([sys.executable, "-m", "sandbox.skills", *args], env=full, capture_output=True, text=True,
                          timeout=180)


def ok(r: subprocess.CompletedProcess) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], check=True)


# ---- download --------------------------------------------------------------------------------------------

@pytest.mark.network
def test_a_download_goes_through_the_proxy_and_lands_in_the_artifact_folder_with_its_index(tmp_path, web):
    body = b"%PDF-1.4 not really a pdf, but bytes to count\n" * 40
    web.pages["/reports/annual report 2023.pdf"] = (200, {"Content-Type": "application/pdf"}, body)
    web.pages["/export"] = (200, {"Content-Type": "text/csv; charset=utf-8",
                                  "Content-Disposition": 'attachment; filename="../../stations.csv"'}, b"a,b\n1,2\n")
    url = f"{HOST}/reports/annual%20report%202023.pdf"
    got = ok(skill(tmp_path, "download", "get", url, proxy=web.url))
    assert got == {"path": str(tmp_path / "artifacts" / "annual_report_2023.pdf"), "url": url,
                   "content_type": "application/pdf", "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    assert Path(got["path"]).read_bytes() == body
    assert f"GET {url}" in web.seen  # through the proxy: the host exists nowhere else
    again = ok(skill(tmp_path, "download", "get", url, proxy=web.url))
    assert again["path"].endswith("annual_report_2023-2.pdf")  # a second copy never overwrites the first
    named = ok(skill(tmp_path, "download", "get", f"{HOST}/export", proxy=web.url))
    assert named["path"] == str(tmp_path / "artifacts" / "stations.csv")  # the server's name, made safe
    listed = ok(skill(tmp_path, "artifact", "list"))["artifacts"]
    assert [(Path(a["path"]).name, a["url"]) for a in listed] == [
        ("annual_report_2023.pdf", url), ("annual_report_2023-2.pdf", url), ("stations.csv", f"{HOST}/export")]
    index = [json.loads(line) for line in (tmp_path / "artifacts" / "artifacts.jsonl").read_text().splitlines()]
    assert [r["sha256"] for r in index] == [got["sha256"], got["sha256"], named["sha256"]]
    assert all(r["via"] == "download" and r["at"] for r in index)


@pytest.mark.network
def test_a_download_over_the_cap_or_refused_by_the_server_is_one_line_and_leaves_nothing(tmp_path, web):
    web.pages["/big.zip"] = (200, {"Content-Type": "application/zip"}, b"x" * 5000)
    web.pages["/stream.bin"] = (200, {"Content-Type": "application/octet-stream", "X-No-Length": "1"}, b"y" * 5000)
    capped = skill(tmp_path, "download", "get", f"{HOST}/big.zip", proxy=web.url, OMNIDR_MAX_DOWNLOAD_BYTES="1000")
    assert capped.returncode == 1 and capped.stdout == ""
    assert capped.stderr.strip() == ("omnidr-skill download get: download failed: the file is 5000 bytes, above the "
                                     "download cap of 1000 bytes (OMNIDR_MAX_DOWNLOAD_BYTES)")
    streamed = skill(tmp_path, "download", "get", f"{HOST}/stream.bin", proxy=web.url,
                     OMNIDR_MAX_DOWNLOAD_BYTES="1000")
    assert streamed.returncode == 1
    assert "larger than the download cap of 1000 bytes (OMNIDR_MAX_DOWNLOAD_BYTES); nothing was kept" in streamed.stderr
    missing = skill(tmp_path, "download", "get", f"{HOST}/nothing-here", proxy=web.url)
    assert missing.stderr.strip() == "omnidr-skill download get: download failed: the server answered 404 Not Found"
    bad = skill(tmp_path, "download", "get", "ftp://files.opends.test/a")
    assert bad.returncode == 1 and "only http:// and https:// URLs" in bad.stderr
    assert [p.name for p in (tmp_path / "artifacts").iterdir()] == []  # no partial file, no index line


# ---- readers by format ------------------------------------------------------------------------------------

def test_a_pdf_is_read_page_by_page_with_page_numbers(tmp_path):
    folder = tmp_path / "artifacts"
    write_pdf(folder / "survey.pdf", PdfDoc("survey.pdf", "Harbour survey", [
        [("h1", "Harbour survey 1987"), ("p", "The breakwater was extended by 240 metres.")],
        [("h2", "Appendix"), ("p", "Tide gauge moved to pier 4 (station 118).")]]))
    got = ok(skill(tmp_path, "artifact", "read", "survey.pdf"))
    assert got["format"] == "pdf" and got["pages"] == 2
    first, second = got["text"].split("[page 2]")
    assert first.startswith("[page 1]\nHarbour survey 1987\nThe breakwater was extended by 240 metres.")
    assert "Tide gauge moved to pier 4 (station 118)." in second and "page 2 of 2" in second
    window = ok(skill(tmp_path, "artifact", "read", str(folder / "survey.pdf"), "--offset", "9", "--max-chars", "200"))
    assert window["offset"] == 9 and window["text"].startswith("Harbour survey 1987")
    assert window["total_chars"] == got["total_chars"]


CSV = ("station,city,year,tide_m\n118,Bergen,1987,1.42\n204,Oslo,1987,0.31\n205, oslo ,1990,0.29\n"
       "330,Tromso,1990,2.05\n")


def test_a_csv_gives_its_header_row_count_and_rows_filtered_by_a_column(tmp_path):
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "tides.csv").write_text(CSV)
    whole = ok(skill(tmp_path, "artifact", "read", "tides.csv"))
    assert (whole["columns"], whole["rows"]) == (["station", "city", "year", "tide_m"], 4)
    assert whole["text"].splitlines()[:2] == ["row,station,city,year,tide_m", "1,118,Bergen,1987,1.42"]
    oslo = ok(skill(tmp_path, "artifact", "read", "tides.csv", "--where", "City=Oslo"))
    assert (oslo["where"], oslo["matched"], oslo["rows"]) == ("city=Oslo", 2, 4)
    assert oslo["text"].splitlines() == ["row,station,city,year,tide_m", "2,204,Oslo,1987,0.31", "3,205, oslo ,1990,0.29"]
    wrong = skill(tmp_path, "artifact", "read", "tides.csv", "--where", "town=Oslo")
    assert wrong.returncode == 1 and wrong.stderr.strip() == (
        "omnidr-skill artifact read: --where: no column 'town'; the columns are station, city, year, tide_m")
    semicolons = tmp_path / "artifacts" / "export.csv"  # a European export: ; separated, comma decimals
    semicolons.write_text("Ort;Jahr;Wert\nBremen;1990;1,5\nKiel;1991;2,5\n")
    assert ok(skill(tmp_path, "artifact", "read", "export.csv", "--where", "Ort=Kiel"))["text"].splitlines()[1] == \
        '2,Kiel,1991,"2,5"'
    missing = skill(tmp_path, "artifact", "read", "nope.csv")
    assert missing.returncode == 1 and "no file nope.csv" in missing.stderr


def test_a_zip_lists_its_members_reads_one_and_refuses_traversal_and_bombs(tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    archive = folder / "bundle.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data/tides.csv", CSV)
        zf.writestr("readme.txt", "Station 118 is the harbour gauge.")
        zf.writestr("../../escaped.txt", "should never be written anywhere")
        zf.writestr("zeros.bin", b"\0" * (40 << 20))
    listing = ok(skill(tmp_path, "artifact", "read", "bundle.zip"))
    assert listing["format"] == "zip" and listing["members"] == 4
    by_name = {m["name"]: m for m in listing["listed"]}
    assert by_name["data/tides.csv"]["bytes"] == len(CSV) and by_name["zeros.bin"]["bytes"] == 40 << 20
    assert by_name["../../escaped.txt"]["refused"] == "a path that climbs out of the archive (..)"
    member = ok(skill(tmp_path, "artifact", "read", "bundle.zip", "--member", "data/tides.csv", "--where", "year=1990"))
    assert (member["member"], member["format"], member["matched"]) == ("data/tides.csv", "csv", 2)
    assert ok(skill(tmp_path, "artifact", "read", "bundle.zip", "--member", "readme.txt"))["text"] == \
        "Station 118 is the harbour gauge."
    climb = skill(tmp_path, "artifact", "read", "bundle.zip", "--member", "../../escaped.txt")
    assert climb.returncode == 1 and climb.stderr.strip() == (
        "omnidr-skill artifact read: member '../../escaped.txt' is a path that climbs out of the archive (..): "
        "refused (path traversal)")
    bomb = skill(tmp_path, "artifact", "read", "bundle.zip", "--member", "zeros.bin")
    assert bomb.returncode == 1 and "refused as a likely zip bomb" in bomb.stderr
    assert not list(tmp_path.rglob("escaped.txt")) and not (tmp_path.parent / "escaped.txt").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["bundle.zip"]  # members are read in a temporary folder
    absent = skill(tmp_path, "artifact", "read", "bundle.zip", "--member", "data/other.csv")
    assert "the archive has no member 'data/other.csv'" in absent.stderr


@pytest.mark.media
def test_audio_video_and_images_give_their_facts_frames_and_a_view(tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "libmp3lame", "-metadata",
           "title=Harbour bells", str(folder / "bells.mp3"))
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x180:rate=10:duration=4", "-f", "lavfi", "-i",
           "sine=frequency=220:duration=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
           "-c:a", "aac", "-shortest", str(folder / "clip.mp4"))
    ffmpeg("-f", "lavfi", "-i", "color=c=red:s=300x200", "-frames:v", "1", str(folder / "chart.png"))
    audio = ok(skill(tmp_path, "artifact", "read", "bells.mp3"))
    assert audio["format"] == "audio" and abs(audio["duration_s"] - 3) < 0.2 and audio["tags"]["title"] == "Harbour bells"
    assert [s["type"] for s in audio["streams"]] == ["audio"] and audio["streams"][0]["codec"] == "mp3"
    video = ok(skill(tmp_path, "artifact", "read", "clip.mp4"))
    assert video["format"] == "video" and [s["type"] for s in video["streams"]] == ["video", "audio"]
    assert [f["time_s"] for f in video["frames"]] == [0.5, 1.5, 2.5, 3.5]
    assert all(Path(f["path"]).read_bytes()[:2] == b"\xff\xd8" for f in video["frames"])
    image = ok(skill(tmp_path, "artifact", "read", "chart.png"))
    assert (image["format"], image["width"], image["height"]) == ("image", 300, 200)
    assert Path(image["image"]["path"]).read_bytes()[:2] == b"\xff\xd8"
    # the reference agent shows the model what a CLI agent would open: the view and the frames, as images
    shown = frames_message(image, tmp_path, "read_artifact")
    assert shown is not None and [p["type"] for p in shown["content"]] == ["text", "text", "image_url"]
    frames = frames_message(video, tmp_path, "read_artifact")
    assert frames is not None and sum(p["type"] == "image_url" for p in frames["content"]) == 4


def test_html_and_text_are_read_as_text(tmp_path):
    folder = tmp_path / "artifacts"
    folder.mkdir()
    (folder / "page.html").write_text("<html><head><title>Gauge log</title><script>x=1</script></head>"
                                      "<body><h1>Station 118</h1><p>Mean tide 1.42 m.</p></body></html>")
    (folder / "notes").write_text("plain notes without an extension\nsecond line")
    page = ok(skill(tmp_path, "artifact", "read", "page.html"))
    assert (page["format"], page["title"], page["text"]) == ("html", "Gauge log", "Gauge log\nStation 118\nMean tide 1.42 m.")
    assert ok(skill(tmp_path, "artifact", "read", "notes"))["text"].endswith("second line")
    misuse = skill(tmp_path, "artifact", "read", "page.html", "--member", "x")
    assert misuse.returncode == 1 and "--member is for ZIP archives; page.html is html" in misuse.stderr


# ---- the video reader (App. C.1.2) -------------------------------------------------------------------------

@pytest.mark.media
def test_video_sample_takes_the_midpoints_of_equal_intervals_and_refuses_counts_outside_1_to_100(tmp_path):
    clip = tmp_path / "clip.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x180:rate=10:duration=4", "-c:v", "libx264", "-preset", "ultrafast",
           "-pix_fmt", "yuv420p", str(clip))
    whole = ok(skill(tmp_path, "video", "sample", video=clip))
    assert whole["count"] == 10 and (whole["start_s"], whole["end_s"]) == (0, 4)
    assert [f["time_s"] for f in whole["frames"]] == [0.2, 0.6, 1.0, 1.4, 1.8, 2.2, 2.6, 3.0, 3.4, 3.8]
    assert whole["frames"][2]["timestamp"] == "00:00:01.000"
    files = [Path(f["path"]) for f in whole["frames"]]
    assert all(p.parent == tmp_path / "artifacts" / "frames" and p.read_bytes()[:2] == b"\xff\xd8" for p in files)
    assert len({p.read_bytes() for p in files}) == 10  # testsrc's counter moves: ten different pictures
    part = ok(skill(tmp_path, "video", "sample", "--start", "1", "--end", "3", "--count", "4", video=clip))
    assert [f["time_s"] for f in part["frames"]] == [1.25, 1.75, 2.25, 2.75]
    past = ok(skill(tmp_path, "video", "sample", "--start", "2", "--end", "60", "--count", "1", video=clip))
    assert past["end_s"] == 4 and past["frames"][0]["time_s"] == 3 and "past the end of the video" in past["note"]
    for count in ("0", "101"):
        r = skill(tmp_path, "video", "sample", "--count", count, video=clip)
        assert r.returncode == 1 and r.stderr.strip() == (
            f"omnidr-skill video sample: --count {count} is outside 1 to 100: the video reader samples between 1 and "
            f"100 frames a call")
    late = skill(tmp_path, "video", "sample", "--start", "9", video=clip)
    assert late.stderr.strip() == "omnidr-skill video sample: --start 9 is outside the video, which lasts 4 s"
    protocol = tmp_path / "protocol.json"  # a snapshot's protocol sets the reader's defaults
    protocol.write_text(json.dumps({"video_frames": 3, "video_frames_max": 5}))
    assert ok(skill(tmp_path, "video", "sample", video=clip, OMNIDR_PROTOCOL=str(protocol)))["count"] == 3
    assert "outside 1 to 5" in skill(tmp_path, "video", "sample", "--count", "6", video=clip,
                                     OMNIDR_PROTOCOL=str(protocol)).stderr


@pytest.mark.media
def test_video_subtitles_gives_the_timed_lines_of_an_interval(tmp_path):
    got = ok(skill(tmp_path, "video", "subtitles", "--start", "6", "--end", "12"))
    assert got["source"] == "subtitle_track" and (got["start_s"], got["end_s"]) == (6, 12)
    assert [(line["timestamp"], line["end_s"]) for line in got["lines"]] == [("00:00:06.200", 11.8)]
    assert "switch off the breaker" in got["lines"][0]["text"]
    assert len(ok(skill(tmp_path, "video", "subtitles", "--start", "5", "--end", "12.5"))["lines"]) == 3  # overlaps
    everything = ok(skill(tmp_path, "video", "subtitles"))
    assert len(everything["lines"]) == 6 and everything["lines"][0]["text"].startswith("Today we hang")
    silent = tmp_path / "silent.mp4"
    ffmpeg("-f", "lavfi", "-i", "color=c=blue:s=160x90:r=10:d=2", "-c:v", "libx264", "-preset", "ultrafast",
           "-pix_fmt", "yuv420p", str(silent))
    none = ok(skill(tmp_path, "video", "subtitles", video=silent))
    assert none["source"] == "none" and none["lines"] == [] and "no subtitle track" in none["note"]


# ---- task kinds -------------------------------------------------------------------------------------------

def test_the_skills_serve_the_task_kinds_the_benchmark_runs():
    # every kind an agent with tools runs; mcq questions go to the model directly, without tools (paper 004)
    assert set(TASK_KINDS) == {k.value for k in BUILT_KINDS} - {"mcq"}
    short = [t["function"]["name"] for t in tool_schemas("full", kind="short_answer")]
    assert short == ["probe_video", "sample_video", "read_subtitles", "search_web", "fetch_url", "download_file",
                     "read_artifact", "browser_open", "browser_click", "browser_fill", "browser_submit", "browser_read",
                     "browser_back"]
    assert [s.name for s in skills_at("interface_only", "short_answer")] == ["answer"]  # its delivery, not the report
    report = [t["function"]["name"] for t in tool_schemas("full")]  # report, the default kind: everything as before
    assert report[:4] == ["write_report", "check_report", "probe_video", "read_window"]
    assert {"download_file", "read_artifact", "sample_video", "browser_open"} <= set(report)
    assert [t["function"]["name"] for t in tool_schemas("text_web")] == [
        "write_report", "check_report", "probe_video", "read_window", "search_web", "fetch_url", "record_evidence"]
    box = ToolBox(capability("multimodal", "short_answer"), str(PENDANT), Path("/nonexistent/report"), DEMO / "contract")
    assert [t["function"]["name"] for t in box.schemas()] == short


def test_a_skill_of_the_other_kind_fails_as_a_missing_command_and_install_writes_the_kinds_skills(tmp_path):
    r = skill(tmp_path, "report", "check", kind="short_answer")
    assert r.returncode == 127 and r.stderr.strip() == ("omnidr-skill report check: `report check` is not installed "
                                                        "for short_answer tasks (it serves report tasks)")
    bad = skill(tmp_path, "list", kind="mcq")
    assert bad.returncode == 2 and bad.stderr.strip() == ("omnidr-skill: mcq questions are answered without tools, "
                                                          "so no skill serves them; use one of report, short_answer")
    bad = skill(tmp_path, "list", kind="essay")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "omnidr-skill: OMNIDR_TASK_KIND='essay' is no task kind; use one of report, short_answer")
    done = skill(tmp_path, "install", "--claude-code", str(tmp_path / "cc"), "--agents-md", str(tmp_path / "AGENTS.md"),
                 level="full", kind="short_answer")
    assert done.returncode == 0, done.stderr
    assert sorted(p.parent.name for p in (tmp_path / "cc").glob("*/SKILL.md")) == [
        "omnidr-answer", "omnidr-artifact", "omnidr-browser", "omnidr-doc", "omnidr-download", "omnidr-fetch",
        "omnidr-search", "omnidr-video"]
    agents = (tmp_path / "AGENTS.md").read_text()
    assert "`omnidr-skill video sample [--start START] [--end END] [--count COUNT]`" in agents
    assert "`omnidr-skill browser submit [SELECTOR]`" in agents and "omnidr-skill report" not in agents
    assert "video frames" not in agents and "video read" not in agents  # they write into the report's assets
