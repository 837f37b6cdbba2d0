"""`omnidr snapshot import-videoodyssey`: the authors' release (annotation, videos, subtitles) becomes a frozen
multiple-choice snapshot, and a fault in the release is one line naming the question, before anything is written."""

import json

import pytest
from testkit import run_cli
from videoodyssey_release import ODYSSEY, make_release

pytestmark = [pytest.mark.media]


@pytest.fixture
def release(tmp_path):
    return tmp_path, make_release(tmp_path / "release")


def _import(files, subset, tmp_path, *extra):
    return run_cli("snapshot", "import-videoodyssey", files[subset], tmp_path / f"snap-{subset}", "--videos",
                   tmp_path / "release/videos", "--subtitles", tmp_path / "release/subtitles", *extra)


def test_both_subsets_import_into_frozen_snapshots_with_the_release_labels_kept(release):
    tmp_path, files = release
    av = _import(files, "AV", tmp_path, "--name", "odyssey-av")
    assert av.returncode == 0, av.stdout + av.stderr
    snap = tmp_path / "snap-AV"
    assert "2 video(s) (harbour-walk: linked, workshop-day: linked), 2 with subtitles" in av.stdout
    assert "subset AV" in av.stdout and "froze" in av.stdout and (snap / "MANIFEST.json").is_file()
    assert json.loads((snap / "snapshot.json").read_text())["name"] == "odyssey-av"
    # the videos are the release's files, hashed; the annotation is kept for the export
    videos = {v["id"]: v for v in json.loads((snap / "videos.json").read_text())["videos"]}
    demo = {v["id"]: v for v in json.loads((ODYSSEY / "videos.json").read_text())["videos"]}
    assert {k: v["sha256"] for k, v in videos.items()} == {k: v["sha256"] for k, v in demo.items()}
    assert videos["harbour-walk"]["release"] == {"video_id": "harbour-walk", "video_category": "TRAVEL",
                                                 "duration_minutes": 4.0}
    assert videos["harbour-walk"]["subtitles"]["source"] == "release"
    assert (snap / "release/VideoOdyssey_AV.json").read_bytes() == files["AV"].read_bytes()
    # a question: options without their letters, the window from time_reference, the audio type from the label
    task = json.loads((snap / "tasks/harbour-beep-count/task.json").read_text())
    original = json.loads((ODYSSEY / "tasks/harbour-beep-count/task.json").read_text())
    assert (task["options"], task["answer"], task["ccl"]) == (original["options"], original["answer"], original["ccl"])
    assert (task["subset"], task["audio_type"], task["task_type"]) == ("AV", "sound", "sound-counting")
    assert task["release"]["time_reference"] == "00:02:31-00:02:37" and "dimension" not in task
    v = _import(files, "V", tmp_path)
    assert v.returncode == 0 and "subset V" in v.stdout, v.stdout + v.stderr
    trend = json.loads((tmp_path / "snap-V/tasks/harbour-number-trend/task.json").read_text())
    # a question with two types keeps both; its task type is the first, as a label
    assert trend["release"]["question_type"] == ["State Change", "Numerical Reasoning"]
    assert trend["task_type"] == "state-change"


def _edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d[0]["questions"][0].update(options=["A. 4", "B 5", "C. 6", "D. 7"]),
     "question harbour-beep-count: option 'B 5' is not 'B. TEXT' (options are A. to D. in order)"),
    (lambda d: d[0]["questions"][0].update(time_reference="00:02:31-00:05:00"),
     "question harbour-beep-count: time_reference 00:02:31-00:05:00 ends past the end of its video (4.00 min)"),
    (lambda d: d[0]["questions"][0].update(audio_type=["Noise"]),
     "question harbour-beep-count: an AV question needs an audio_type of speech, sound or music, not ['Noise']"),
    (lambda d: d[0].update(video_path="missing.mp4"),
     "video harbour-walk, question harbour-beep-count: video file"),
    (lambda d: d[0].update(duration_minutes=61.3),
     "video harbour-walk: ffprobe reads 4.00 min but the annotation says 61.3 min; check the file"),
])
def test_a_fault_in_the_release_is_one_line_naming_it_and_nothing_is_written(release, change, message):
    tmp_path, files = release
    _edit(files["AV"], change)
    r = _import(files, "AV", tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if not line.startswith("checking video")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "snap-AV").exists()


def test_the_subset_comes_from_the_file_name_and_the_folder_must_be_new(release):
    tmp_path, files = release
    renamed = files["V"].with_name("odyssey.json")
    files["V"].rename(renamed)
    r = _import({"V": renamed}, "V", tmp_path)
    assert r.returncode == 2 and "the subset cannot be told from the name" in r.stderr
    (tmp_path / "snap-AV").mkdir()
    (tmp_path / "snap-AV" / "x").write_text("")
    taken = _import(files, "AV", tmp_path)
    assert taken.returncode == 2 and "exists and is not an empty folder" in taken.stderr


@pytest.mark.parametrize(("template", "message"), [
    ("Answer {question}", "the prompt template lacks {options}"),
    ("{question} {options} {choices}", "the prompt template names {choices}; it may use {question}, {options} and "
     "{subtitles}"),
    ("{question} {options} {", "the prompt template does not parse"),
])
def test_a_prompt_template_with_unknown_or_missing_placeholders_is_refused_before_any_work(release, template, message):
    tmp_path, files = release
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(template, "utf-8")
    r = _import(files, "V", tmp_path, "--prompt-file", prompt)
    assert r.returncode == 2 and message in r.stderr and "checking video" not in r.stderr, r.stderr
    assert not (tmp_path / "snap-V").exists()


def test_the_prompt_template_is_kept_in_the_snapshot_protocol(release):
    tmp_path, files = release
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Look at the frames.\n{subtitles}\nQuestion: {question}\nOptions:\n{options}\nLetter only.", "utf-8")
    r = _import(files, "V", tmp_path, "--prompt-file", prompt)
    assert r.returncode == 0, r.stdout + r.stderr
    protocol = json.loads((tmp_path / "snap-V/hyperparameters.json").read_text())
    assert protocol["official_prompt"] == prompt.read_text("utf-8") and protocol["default_frames"] == 64


def test_official_audio_is_refused_on_the_visual_subset_before_any_attempt(release):
    """The authors' runner takes `--input av` only for VideoOdyssey-AV: so does `official-av` here."""
    tmp_path, files = release
    assert _import(files, "V", tmp_path).returncode == 0
    r = run_cli("eval", "--snapshot", tmp_path / "snap-V", "--harness", "direct", "--capability", "official-av", "--runs-root",
                tmp_path / "runs")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "official-av gives the model audio, which the authors' runner allows on the AV subset only" in r.stderr
    assert not list((tmp_path / "runs").glob("*/direct-*"))
