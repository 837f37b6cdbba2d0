"""A multiple-choice run root's results (paper 004): four direct-harness system folders scored by the option
checker, their leaderboard.md with accuracy by CCL bin, LOVO and chance level, the modality and window ablation
tables grouped from the folder names, the chart by CCL bin, and `omnidr compare` of the folders."""

import sys
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).parents[1] / "evaluation"))
from answer_helpers import write_answer_attempt, write_answer_run  # noqa: E402
from mcq_helpers import QUESTIONS, write_mcq_snapshot  # noqa: E402

# folder -> the letter each question is answered with (keys: q-count B, q-order C, q-sum D, q-when A)
SYSTEMS = {
    "direct-video-64f-full-scripted": {"q-count": "B", "q-order": "A", "q-sum": "A", "q-when": "B"},
    "direct-video+subtitles-64f-full-scripted": {"q-count": "B", "q-order": "C", "q-sum": "A", "q-when": "B"},
    "direct-video-64f-cw-frames-scripted": {"q-count": "B", "q-order": "C", "q-sum": "D", "q-when": "B"},
    "direct-video-64f-cw-rate-scripted": {"q-count": "B", "q-order": "C", "q-sum": "D", "q-when": "A"},
}


def _root(tmp_path) -> tuple[Path, Path]:
    from omnidr.evaluation import ScoreRequest, score_run
    from omnidr.pipeline._results import EvalConfig
    from omnidr.pipeline._specs import SystemSpec, parse_judge, parse_model
    from sandbox.models import Budget

    snapshot = write_mcq_snapshot(tmp_path / "snapshot")
    root = tmp_path / "runs" / "mcq-test"
    for folder, letters in SYSTEMS.items():
        run = write_answer_run(root / folder, snapshot, list(QUESTIONS))
        for task_id, letter in letters.items():
            write_answer_attempt(run, task_id, 1, "success",
                                 answer=dict(answer=letter, termination="complete_answer", source="research"))
        # the direct harness is registered by the runner; eval.json names a registered one, the folder the setting
        setting = folder.removeprefix("direct-").removesuffix("-scripted")
        config = EvalConfig(system=SystemSpec(harness="reference", capability=setting, model=parse_model("scripted")),
                            judge=parse_judge(""), budget_label="default", budget=Budget(), tasks=list(QUESTIONS),
                            snapshot_id="mcq-test")
        (run / "eval.json").write_text(config.model_dump_json(indent=2), "utf-8")
        score_run(ScoreRequest(run_dir=run))
    return root, snapshot


def test_the_run_root_gets_ccl_accuracy_ablations_and_the_chart(tmp_path):
    from omnidr.evaluation import mcq_checker_identity
    from omnidr.pipeline.kinds._answer_board import build_answer_results, print_answer_board, write_answer_results

    root, snapshot = _root(tmp_path)
    board, results = build_answer_results(root, snapshot, "mcq-test", mcq_checker_identity().key, list(QUESTIONS))
    assert board is not None and results is not None and not results.left_out
    assert results.task_kind == "mcq" and len(board.rows) == 4
    files = write_answer_results(root, board, results)
    md = (root / "leaderboard.md").read_text("utf-8")
    assert md.startswith("# Multiple-choice leaderboard: mcq-test") and "chance level 25%" in md
    assert "Accuracy (%) by continuous certificate length (minutes); chance 25%" in md
    assert "Leave-one-video-out accuracy (%) and maximum change" in md

    modality = results.tables["ablation_modality"]
    assert modality["headers"] == ["model", "frames", "window", "video", "video+subtitles", "video+audio",
                                   "video+subtitles+audio"]
    assert modality["rows"] == [["scripted", "64", "cw-frames", "75.0", "-", "-", "-"],
                                ["scripted", "64", "cw-rate", "100.0", "-", "-", "-"],
                                ["scripted", "64", "full", "25.0", "50.0", "-", "-"]]
    window = results.tables["ablation_window"]
    assert window["rows"] == [["scripted", "video", "64", "25.0", "75.0", "100.0"],
                              ["scripted", "video+subtitles", "64", "50.0", "-", "-"]]
    ccl = {tuple(r[:4]): r[4:] for r in results.tables["ablation_window_ccl"]["rows"]}
    # bins: q-count [0, 0.5), q-order [3, 15), q-sum [15, 60), q-when [60, inf); none in [0.5, 3)
    assert ccl[("scripted", "video", "64", "cw-frames")] == ["100.0", "-", "100.0", "100.0", "0.0"]
    assert "Accuracy (%) by window" in md and "Accuracy (%) by input modality" in md

    chart = root / "leaderboard.png"
    assert chart in files and chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and chart.stat().st_size > 10_000
    console = Console(record=True, width=200)
    print_answer_board(board, console)
    text = console.export_text()
    assert "Accuracy (%) by continuous certificate length; chance 25%" in text and "[60, inf) min (1)" in text


def test_ablation_tables_need_two_settings_of_their_axis(tmp_path):
    from omnidr.evaluation import mcq_checker_identity
    from omnidr.pipeline.kinds._answer_board import ablation_grids, build_answer_results, parse_direct_label

    root, snapshot = _root(tmp_path)
    board, _ = build_answer_results(root, snapshot, "mcq-test", mcq_checker_identity().key, list(QUESTIONS))
    folders = {r.label: r.label for r in board.rows}  # labels that are no direct-harness names: nothing to group
    assert ablation_grids(board, folders) == {}
    parsed = parse_direct_label("direct-video+subtitles+audio-128f-cw-rate-openai-gpt-x")
    assert parsed is not None and parsed.setting.label == "video+subtitles+audio-128f-cw-rate"
    assert parsed.model == "openai-gpt-x" and parse_direct_label("reference-full-scripted") is None


def test_compare_prints_the_paired_table_and_the_ablations(tmp_path):
    from omnidr.pipeline._compare import compare_folders

    root, snapshot = _root(tmp_path)
    console = Console(record=True, width=220)
    folders = [root / name for name in SYSTEMS]
    compare_folders(folders, snapshot, console)
    text = console.export_text()
    assert "Paired accuracy differences" in text and "answers per task" in text
    assert "Accuracy (%) by input modality" in text and "Accuracy (%) by window" in text
    assert "Accuracy (%) by continuous certificate length" in text
