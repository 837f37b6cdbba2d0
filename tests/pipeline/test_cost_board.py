"""Cost on the leaderboard and in MLflow: two systems of the demo priced by `--prices` (one at a test price, one
at zero), their cost columns, the score-against-cost figure with its Pareto frontier, and the judge's verdicts as
MLflow assessments on each attempt's trace beside the attempt's cost."""

import json

import pytest
from testkit import DEMO, run_cli

pytestmark = [pytest.mark.docker, pytest.mark.browser, pytest.mark.images("reference")]
TASK = "sky-blue-rayleigh"
TEST_PRICE = {"input_per_mtok": 3.0, "cached_input_per_mtok": 0.3, "output_per_mtok": 15.0}


def _eval(tmp_path, runs, capability: str, rates: dict) -> None:
    prices = tmp_path / f"prices-{capability}.json"
    prices.write_text(json.dumps({"scripted-demo": rates}))
    r = run_cli("eval", "--snapshot", DEMO, "--capability", capability, "--task", TASK, "--prices", prices, "--runs-root", runs,
                timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_the_board_shows_cost_and_the_frontier_and_mlflow_the_verdicts(tmp_path):
    from mlflow import MlflowClient

    runs = tmp_path / "runs"
    _eval(tmp_path, runs, "full", TEST_PRICE)
    _eval(tmp_path, runs, "video", {"input_per_mtok": 0, "output_per_mtok": 0})
    [root] = runs.glob("demo-*")
    results = json.loads((root / "leaderboard.json").read_text())
    labels = {folder: label for label, folder in results["systems"].items()}
    full, video = labels["reference-full-scripted"], labels["reference-video-scripted"]
    costs = results["costs"]
    # the priced system's cost is its gateway lines' usage at the test rates, worked out here
    expected = 0.0
    for line in (root / "reference-full-scripted" / "attempts" / TASK / "1" / "logs" / "gateway.jsonl").open():
        usage = json.loads(line)["usage"]
        if usage:
            cached = usage.get("cache_read_input_tokens") or 0
            expected += ((usage["input_tokens"] - cached) * 3.0 + cached * 0.3 + usage["output_tokens"] * 15.0) / 1e6
    assert expected > 0 and costs[full]["total"] == pytest.approx(expected)
    assert costs[full]["per_task_median"] == pytest.approx(expected)
    assert costs[full]["per_task"] == {TASK: pytest.approx(expected)}
    assert costs[video]["total"] == 0.0 and costs[full]["price_source"].startswith("--prices prices-full.json")
    assert costs[full]["judge"] == 0.0  # the offline judge
    md = (root / "leaderboard.md").read_text()
    assert "| system | Avg | cost per task (median) | cost (total) |" in md
    assert f"| {video} |" in md and "$0.0000" in md and f"${expected:.4f}" in md
    png = (root / "cost.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<img src='cost.png'" in (root / "index.html").read_text()
    scores = {r["label"]: r["avg"] for r in results["leaderboard"]["rows"]}
    on_frontier = {row[0] for row in results_table(md) if row[6] == "yes"}
    assert video in on_frontier  # nothing is cheaper than $0
    assert (full in on_frontier) == (scores[full] > scores[video])

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    exp = client.get_experiment_by_name(f"omnidr/{root.name}")
    for folder in ("reference-full-scripted", "reference-video-scripted"):
        [child] = client.search_runs([exp.experiment_id], f"tags.`omnidr.attempt` = '{folder}/{TASK}/1'")
        trace = client.get_trace(child.data.tags["omnidr.trace"])
        evaluation = json.loads((root / folder / "evaluation" / TASK / "evaluation.json").read_text())
        judged = {f"atom {a['atom_id']}": a for a in evaluation["atoms"] if a["evaluator"] == "J" and a["verdict"]}
        assessments = {a.name: a for a in trace.info.assessments}
        assert judged and {n for n in assessments if n.startswith("atom ")} == set(judged)
        for name, atom in judged.items():
            a = assessments[name]
            assert a.value == atom["verdict"] and a.source.source_id == results["judge"]
            assert a.source.source_type == "CODE"  # the offline baseline is no model
            assert a.metadata["quote"] == atom["quote"] and a.metadata["direction"] == atom["direction"]
        assert assessments["score"].value == pytest.approx(evaluation["score"]["total"])
        cost = child.data.metrics["cost_usd"]
        assert assessments["cost_usd"].value == pytest.approx(cost)
        assert trace.info.tags["omnidr.cost_usd"] == f"{cost:.6f}"
    [system] = client.search_runs([exp.experiment_id], "tags.`omnidr.system` = 'reference-full-scripted' and "
                                  "tags.`omnidr.kind` = 'system'")
    assert system.data.metrics["cost_total_usd"] == pytest.approx(expected)


def results_table(md: str) -> list[list[str]]:
    """The rows of leaderboard.md's cost table."""
    lines = md[md.index("| system | Avg | cost per task"):].split("\n\n")[0].splitlines()[2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
