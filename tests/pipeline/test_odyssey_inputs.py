"""Bad settings for a multiple-choice snapshot stop before any attempt with exit 2 and one line saying what to do:
the wrong harness for the kind, an input setting that is not MODALITY-NNNf-WINDOW, a frame budget the snapshot's
protocol does not allow."""

import pytest
from testkit import DEMO, ROOT, run_cli, said

pytestmark = [pytest.mark.docker, pytest.mark.media]  # the checks reach the engine and probe the videos
ODYSSEY = ROOT / "snapshots/demo-odyssey"


@pytest.mark.parametrize(("snapshot", "options", "expected"), [
    (ODYSSEY, ("--harness", "reference"), "holds multiple-choice questions, which go to the model directly "
                                          "(paper 004): use the direct harness (HARNESS=direct), not reference"),
    (DEMO, ("--harness", "direct"), "the direct harness answers multiple-choice (mcq) snapshots only"),
    (ODYSSEY, ("--capability", "video-100f-full"), "100 frames is not a budget of this snapshot (16, 32, 64)"),
    (ODYSSEY, ("--capability", "vision-32f-full"), "the direct harness takes an input setting: modality 'vision' is "
                                                   "not one of video, video+subtitles, video+audio, video+subtitles+audio"),
    (ODYSSEY, ("--capability", "video-32f-window"), "window 'window' is not one of full, cw-frames, cw-rate"),
])
def test_a_bad_setting_for_the_kind_exits_2_with_one_line(tmp_path, snapshot, options, expected):
    result = run_cli("eval", "--snapshot", snapshot, *options, "--runs-root", tmp_path / "runs")
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr
    assert expected in result.stderr and len(said(result.stderr)) == 1, result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("attempt.json"))
