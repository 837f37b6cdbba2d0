"""The skills' video and web functions (`sandbox.skills._media`, `_web`) on the demo snapshot's files, on the host."""

import hashlib
import json
from pathlib import Path

import pytest
from testkit import DEMO

from sandbox.skills import _media, _report, _web

PENDANT = DEMO / "tasks" / "pendant-lamp-safety" / "video.mp4"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _page_text(url: str) -> str:
    corpus = {p["url"]: p for p in json.loads((DEMO / "web" / "corpus.json").read_text())["pages"]}
    raw = (DEMO / "web" / corpus[url]["path"]).read_bytes()
    return _web.pdf_to_text(raw) if raw[:5] == b"%PDF-" else _web.html_to_text(raw.decode())[1]


# ---- video tools -----------------------------------------------------------------------------------

def test_windows_are_300_s_and_cover_the_video():
    assert _media.windows(750) == [_media.Window(0, 0, 300), _media.Window(1, 300, 600), _media.Window(2, 600, 750)]
    assert _media.windows(36) == [_media.Window(0, 0, 36)]
    assert _media.windows(0) == []
    assert _media.sample_times(0, 36, 6) == [3, 9, 15, 21, 27, 33]


@pytest.mark.media
def test_probe_reads_duration_fps_resolution_audio_and_subtitles():
    p = _media.probe_video(str(PENDANT))
    assert (p["duration_s"], p["fps"], p["width"], p["height"]) == (36.0, 15.0, 426, 240)
    assert len(p["audio"]) == 1 and p["subtitles"][0]["codec"] == "mov_text"


@pytest.mark.media
def test_frames_are_deterministic(tmp_path):
    a = _media.extract_frame(str(PENDANT), 13.0, tmp_path / "a.jpg")
    b = _media.extract_frame(str(PENDANT), 13.0, tmp_path / "b.jpg")
    c = _media.extract_frame(str(PENDANT), 25.0, tmp_path / "c.jpg")
    assert a.read_bytes()[:2] == b"\xff\xd8" and _sha(a) == _sha(b) != _sha(c)
    one = _media.window_frames(str(PENDANT), _media.probe_video(str(PENDANT)), 0, tmp_path / "r1", 6)
    two = _media.window_frames(str(PENDANT), _media.probe_video(str(PENDANT)), 0, tmp_path / "r2", 6)
    assert [f["time_s"] for f in one["frames"]] == [3, 9, 15, 21, 27, 33]
    assert [_sha(tmp_path / "r1" / Path(f["src"]).name) for f in one["frames"]] == \
           [_sha(tmp_path / "r2" / Path(f["src"]).name) for f in two["frames"]]


@pytest.mark.media
def test_transcript_comes_from_the_subtitle_track():
    p = _media.probe_video(str(PENDANT))
    source, cues = _media.transcript(str(PENDANT), p["subtitles"])
    assert source == "subtitle_track" and len(cues) == 6
    assert cues[1]["start_s"] == 6.2 and "switch off the breaker" in cues[1]["text"]
    zh = DEMO / "tasks" / "sky-blue-rayleigh" / "video.mp4"
    _src, zh_cues = _media.transcript(str(zh), _media.probe_video(str(zh))["subtitles"])
    assert "瑞利" in "".join(c["text"] for c in zh_cues) or "散射" in zh_cues[1]["text"]


# ---- web tools -------------------------------------------------------------------------------------

def test_pdf_and_html_text_hold_the_verbatim_quotes():
    facts = json.loads((DEMO / "tasks" / "pendant-lamp-safety" / "facts.json").read_text())["facts"]
    quoted = [(s["url"], s["quote"]) for f in facts for s in f.get("sources", [])]
    assert any(u.endswith(".pdf") for u, _q in quoted)
    for url, quote in quoted:
        assert _report.normalize(quote) in _report.normalize(_page_text(url)), url


def test_search_index_returns_urls_and_titles_only_ranked_by_rare_terms():
    idx = _web.SearchIndex.from_env((DEMO / "web" / "corpus.json").as_posix())
    hits = idx.search("ND exposure math")
    assert hits[0]["url"] == "https://www.example-photoblog.net/guides/nd-exposure-math"
    assert set(hits[0]) == {"url", "title", "kind"}
    assert idx.search("瑞利散射")[0]["url"].startswith("https://")
    assert all(h["kind"] == "document" for h in idx.search("datasheet data sheet", kind="document"))
    assert idx.search("zzzz qqqq") == []
