"""The paper's analysis tables (App. F: Tables 4, 5, 15, 16, 18-22) from a leaderboard and its
systems' report scores, on hand-built reports whose values are worked out by hand."""

import csv
import io

import pytest
from scoring_trees import many, tree

from omnidr.scoring import (
    TABLE_NAMES,
    ProcessMedians,
    ReportScore,
    SystemKey,
    SystemScores,
    analysis_grids,
    build_leaderboard,
    score_report,
)

# one direction per dimension, 10 atoms each: k passes give a dimension score of 10 k points
TREE = tree("x", many("c", "C-LC", 10) + many("r", "R-CS", 10) + many("p", "P-LY", 10, difficulty="L1"))


def report(task: str, c: int, r: int, p: int) -> ReportScore:
    d = {f"{prefix}{i:02d}": "pass" if i < k else "fail" for prefix, k in (("c", c), ("r", r), ("p", p)) for i in range(10)}
    return score_report(TREE, d).model_copy(update={"task_id": task})


def system(name, reports) -> SystemScores:
    return SystemScores(system=SystemKey(model=name), reports=reports)


# strong: t1 (10,10,10) = 100, t2 (5,5,5) = 50, t3 (10,0,10) = 70, t4 (0,0,0) = 0
# weak:   t1 (5,5,5) = 50, t2 fails, t3 (0,0,10) = 20, t4 (0,0,0) = 0
STRONG = system("strong", [report("t1", 10, 10, 10), report("t2", 5, 5, 5), report("t3", 10, 0, 10), report("t4", 0, 0, 0)])
WEAK = system("weak", [report("t1", 5, 5, 5), ReportScore.failure("t2", "no report"), report("t3", 0, 0, 10),
                       report("t4", 0, 0, 0)])
LABELS = {"t1": {"family": "home", "subcategory": "repair", "query_form": "general"},
          "t2": {"family": "home", "subcategory": "cooking", "query_form": "general"},
          "t3": {"family": "science", "subcategory": "physics", "query_form": "user_demand"},
          "t4": {"family": "science", "subcategory": "physics", "query_form": "video_view"}}


def rows(grid) -> list[dict]:
    return list(csv.DictReader(io.StringIO(grid.csv())))


@pytest.fixture(scope="module")
def tables():
    board = build_leaderboard([STRONG, WEAK], replicates=500, with_comparisons=True)
    process = {"strong": ProcessMedians(traces=4, steps=41.5, wall_time_s=612.0, total_tokens=51234.0),
               "weak": ProcessMedians(traces=3, steps=12.0, wall_time_s=95.4, total_tokens=8000.0)}
    return board, analysis_grids(board, [STRONG, WEAK], LABELS, process)


def test_the_paired_table_gives_the_differences_of_avg_success_and_each_dimension(tables):
    board, grids = tables
    # every table but the sensitivity (this board has none), in the order the files and pages show them
    assert list(grids) == [n for n in TABLE_NAMES if n != "sensitivity"]
    [pair] = rows(grids["paired"])
    # weak - strong: Avg (70/4) - (220/4) = -37.5; success 75% - 100% = -25 pp
    assert (pair["A"], pair["B"], pair["Avg A - B"], pair["Success (pp)"]) == ("weak", "strong", "-37.5", "-25.0")
    # content over successful reports: weak (50 + 0 + 0) / 3 = 16.7, strong (100 + 50 + 100 + 0) / 4 = 62.5
    assert pair["Content"] == f"{50 / 3 - 62.5:+.1f}"
    # citation: weak (50 + 0 + 0) / 3, strong (100 + 50 + 0 + 0) / 4 = 37.5; presentation: weak (50 + 100 + 0) / 3
    # = 50, strong 62.5
    assert pair["Citation"] == f"{50 / 3 - 37.5:+.1f}" and pair["Presentation"] == "-12.5"
    # per task weak - strong: -50, -50, -50, 0 -> 0 wins, 1 tie, 3 losses
    assert pair["W/T/L"] == "0/1/3"
    assert (pair["steps A / B"], pair["time (s) A / B"], pair["tokens A / B"]) == ("12.0 / 41.5", "95 / 612",
                                                                                 "8,000 / 51,234")
    c = board.comparisons[0]
    assert pair["95% CI"] == f"[{c.ci_low:.1f}, {c.ci_high:.1f}]"


def test_family_and_subcategory_are_successful_report_means_and_query_form_counts_failures_as_zero(tables):
    """App. F.4: Tables 4, 19 and 20 leave missing or unreadable reports out; Table 18 counts them as 0."""
    _, grids = tables
    family = {r["family"]: r for r in rows(grids["by_family"])}
    # home: strong (100 + 50) / 2; weak t1 50, its failed t2 left out: 50; all systems (100 + 50 + 50) / 3
    assert family["home"] == {"family": "home", "tasks": "2", "strong": "75.0", "weak": "50.0", "all systems": "66.7"}
    # science: strong (70 + 0) / 2, weak (20 + 0) / 2, all (70 + 0 + 20 + 0) / 4
    assert family["science"] == {"family": "science", "tasks": "2", "strong": "35.0", "weak": "10.0",
                                 "all systems": "22.5"}
    sub = {r["subcategory"]: (r["tasks"], r["strong"], r["weak"], r["all systems"]) for r in rows(grids["by_subcategory"])}
    # cooking is t2 alone, which weak failed: weak has no successful report there
    assert sub == {"cooking": ("1", "50.0", "-", "50.0"), "physics": ("2", "35.0", "10.0", "22.5"),
                   "repair": ("1", "100.0", "50.0", "75.0")}
    form = {r["query form"]: (r["strong"], r["weak"], r["all systems"]) for r in rows(grids["by_query_form"])}
    # general: strong (100 + 50) / 2; weak (50 + 0, the failure) / 2; all (100 + 50 + 50 + 0) / 4
    assert form == {"general": ("75.0", "25.0", "50.0"), "user_demand": ("70.0", "20.0", "45.0"),
                    "video_view": ("0.0", "0.0", "0.0")}
    assert "successful-report means" in grids["by_family"].title and "failures 0" in grids["by_query_form"].title


def test_pass_rates_per_direction_and_level_with_the_mean_over_systems(tables):
    _, grids = tables
    directions = {r["system"]: r for r in rows(grids["directions"])}
    assert len(directions["strong"]) == 1 + 23  # every direction of the inventory is a column
    # C-LC: strong (1 + .5 + 1 + 0) / 4 = 62.5%; weak (.5 + 0 + 0) / 3 = 16.7%; mean 39.6
    assert (directions["strong"]["C-LC"], directions["weak"]["C-LC"]) == ("62.5", "16.7")
    assert directions["mean over systems"]["C-LC"] == f"{100 * (0.625 + 0.5 / 3) / 2:.1f}"
    assert directions["strong"]["C-FC"] == "-"  # no applicable atom: no rate
    levels = {r["system"]: r for r in rows(grids["difficulty"])}
    # L0 holds C-LC and R-CS (20 atoms), L1 the P-LY atoms: strong L1 (1 + .5 + 1 + 0) / 4
    assert levels["strong"]["L1"] == "62.5" and levels["weak"]["L1"] == f"{100 * (0.5 + 1 + 0) / 3:.1f}"


def test_tables_without_a_pair_or_a_sensitivity_leave_those_out():
    board = build_leaderboard([STRONG], replicates=200)
    grids = analysis_grids(board, [STRONG], LABELS)
    assert set(grids) == {"by_family", "by_subcategory", "by_query_form", "directions", "difficulty"}
    assert [r["system"] for r in rows(grids["directions"])] == ["strong"]  # no mean row for one system
    assert "unlabelled" not in grids["by_family"].csv()
