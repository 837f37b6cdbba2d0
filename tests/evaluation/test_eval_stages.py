"""`omnidr eval` runs the evaluator and scoring stages on the demo's example reports, offline."""

import pytest
from eval_helpers import DEMO

pytestmark = [pytest.mark.browser, pytest.mark.media]  # the video checks run ffprobe on the demo videos


def test_eval_scores_the_example_reports_with_the_baseline_judge():
    from omnidr.pipeline import check_snapshot

    checked = check_snapshot(DEMO)
    stages = {s.name: s for s in checked.stages}
    assert stages["evaluator"].status == "ok", stages["evaluator"].detail
    assert "offline-baseline" in stages["evaluator"].detail
    assert "good (pendant-lamp-safety): M 13/13 pass" in stages["evaluator"].detail
    assert "skeleton (pendant-lamp-safety): M 0/13 pass (content-free report)" in stages["evaluator"].detail
    assert stages["scoring"].status == "ok"
    assert "good: 100.0" in stages["scoring"].detail and "skeleton: 0.0" in stages["scoring"].detail
    assert all(s.status == "ok" for s in checked.stages)
    assert checked.snapshot_id.startswith("demo-")
