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
    # every table but the sensitivity and the harness table (this board has neither), in the order the files and
    # pages show them
    assert list(grids) == [n for n in TABLE_NAMES if n not in ("sensitivity", "harnesses")]
    [pair] = rows(grids["paired"])
    # App. F.2: A is the higher-ranked system. strong - weak: Avg (220/4) - (70/4) = +37.5; success 100% - 75% = +25
    assert (pair["A"], pair["B"], pair["Avg A - B"], pair["Success (pp)"]) == ("strong", "weak", "+37.5", "+25.0")
    # content over successful reports: strong (100 + 50 + 100 + 0) / 4 = 62.5, weak (50 + 0 + 0) / 3 = 16.7
    assert pair["Content"] == f"{62.5 - 50 / 3:+.1f}"
    # citation: strong (100 + 50 + 0 + 0) / 4 = 37.5, weak (50 + 0 + 0) / 3; presentation: strong 62.5, weak
    # (50 + 100 + 0) / 3 = 50
    assert pair["Citation"] == f"{37.5 - 50 / 3:+.1f}" and pair["Presentation"] == "+12.5"
    # per task strong - weak: +50, +50, +50, 0 -> 3 wins, 1 tie, 0 losses
    assert pair["W/T/L"] == "3/1/0"
    assert (pair["steps A / B"], pair["time (s) A / B"], pair["tokens A / B"]) == ("41.5 / 12.0", "612 / 95",
                                                                                 "51,234 / 8,000")
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
    # the dashboard's pooled-atom rate (App. F.3): C-LC passes over applicable atoms of every successful report,
    # strong 10 + 5 + 10 + 0 of 40, weak 5 + 0 + 0 of 30: 30 / 70, not the mean of the two rates (39.6)
    assert directions["pooled atoms, all systems"]["C-LC"] == f"{100 * 30 / 70:.1f}" == "42.9"
    levels = {r["system"]: r for r in rows(grids["difficulty"])}
    # L1 (the P-LY atoms) pooled: strong 25 of 40, weak 5 + 10 + 0 of 30
    assert levels["pooled atoms, all systems"]["L1"] == f"{100 * 40 / 70:.1f}"
    # L0 holds C-LC and R-CS (20 atoms), L1 the P-LY atoms: strong L1 (1 + .5 + 1 + 0) / 4
    assert levels["strong"]["L1"] == "62.5" and levels["weak"]["L1"] == f"{100 * (0.5 + 1 + 0) / 3:.1f}"


def test_tables_without_a_pair_or_a_sensitivity_leave_those_out():
    board = build_leaderboard([STRONG], replicates=200)
    grids = analysis_grids(board, [STRONG], LABELS)
    assert set(grids) == {"by_family", "by_subcategory", "by_query_form", "directions", "difficulty",
                          "coverage_failures"}
    # no mean row for one system; its pooled-atom row remains (atoms pooled over its reports)
    assert [r["system"] for r in rows(grids["directions"])] == ["strong", "pooled atoms, all systems"]
    assert "unlabelled" not in grids["by_family"].csv()


def test_the_harness_table_averages_matched_model_runs_and_takes_the_median_of_model_medians():
    """Table 22 (App. F.6): two harnesses on the models both ran (m1, m2); m3, run by one harness only, is left out.
    Quality and success are means over the matched model runs; process columns the median of the model medians."""
    def sys_(model, harness, reports):
        return SystemScores(system=SystemKey(model=model, harness=harness, capability="full"), reports=reports)

    a1 = sys_("m1", "alpha", [report("t1", 10, 10, 10), report("t2", 5, 5, 5)])  # 100, 50
    a2 = sys_("m2", "alpha", [report("t1", 10, 0, 10), ReportScore.failure("t2", "no report")])  # 70, failed
    b1 = sys_("m1", "beta", [report("t1", 5, 5, 5), report("t2", 0, 0, 10)])  # 50, 20
    b2 = sys_("m2", "beta", [report("t1", 10, 10, 10), report("t2", 10, 10, 10)])  # 100, 100
    b3 = sys_("m3", "beta", [report("t1", 0, 0, 0), report("t2", 0, 0, 0)])  # not matched: alpha has no m3
    systems = [a1, a2, b1, b2, b3]
    board = build_leaderboard(systems, replicates=200)
    medians = {"m1 / alpha / full": (10.0, 100.0, 1000.0), "m2 / alpha / full": (30.0, 300.0, 3000.0),
               "m1 / beta / full": (5.0, 50.0, 500.0), "m2 / beta / full": (7.0, 70.0, None),
               "m3 / beta / full": (99.0, 990.0, 9900.0)}
    # tool calls and errors follow steps (half, a tenth); the runner reports a tenth more tokens than the gateway
    process = {k: ProcessMedians(traces=2, steps=s, tool_calls=s / 2, tool_errors=s / 10, wall_time_s=t,
                                 total_tokens=n, runner_tokens=None if n is None else n * 1.1)
               for k, (s, t, n) in medians.items()}
    grids = analysis_grids(board, systems, LABELS, process)
    assert list(grids)[:2] == ["harnesses", "by_family"]  # one system per harness here: no pair table is asked
    got = {r["harness"]: r for r in rows(grids["harnesses"])}
    # alpha: Avg (75 + 35) / 2 = 55; success (1 + 0.5) / 2 = 75%; Avg succ. (75 + 70) / 2 = 72.5
    assert (got["alpha"]["models"], got["alpha"]["Avg"], got["alpha"]["Success (%)"], got["alpha"]["Avg succ."]) == (
        "2", "55.0", "75.0", "72.5")
    # beta on m1 and m2 only: Avg (35 + 100) / 2 = 67.5, success 100%; m3's zeros are not in it
    assert (got["beta"]["models"], got["beta"]["Avg"], got["beta"]["Success (%)"]) == ("2", "67.5", "100.0")
    # content: alpha m1 (100 + 50) / 2 = 75, m2 100 (its one report) -> 87.5; beta m1 (50 + 0) / 2 = 25, m2 100 -> 62.5
    assert (got["alpha"]["Content"], got["beta"]["Content"]) == ("87.5", "62.5")
    # process: the median of the two model-level medians; a model without a figure is left out of that median
    assert (got["alpha"]["steps"], got["alpha"]["time (s)"], got["alpha"]["gateway tokens"]) == ("20.0", "200", "2,000")
    assert (got["beta"]["steps"], got["beta"]["time (s)"], got["beta"]["gateway tokens"]) == ("6.0", "60", "500")
    # alpha: tool calls median of (5, 15) = 10, errors of (1, 3) = 2, runner tokens of (1100, 3300) = 2200
    assert (got["alpha"]["tool calls"], got["alpha"]["tool errors"], got["alpha"]["runner tokens"]) == (
        "10.0", "2.0", "2,200")
    assert (got["beta"]["tool calls"], got["beta"]["tool errors"], got["beta"]["runner tokens"]) == ("3.0", "0.6", "550")
    assert got["alpha"]["setting"] == "full"


def test_no_harness_table_without_two_harnesses_on_a_shared_model():
    board = build_leaderboard([STRONG, WEAK], replicates=200)  # no harness named
    assert "harnesses" not in analysis_grids(board, [STRONG, WEAK], LABELS)


def test_failed_coverage_criteria_are_told_apart_by_the_judges_rationale():
    """App. F.3: "omissions of audited research targets dominate explicit contradictions". Coverage criteria are the
    high-volume directions' positive atoms (C-FC, C-CA here) and the coverage checks; a failed C-LC atom is not one."""
    from scoring_trees import atom

    from omnidr.scoring import AtomDecision
    from omnidr.scoring._rationale import failure_kind

    t = tree("x", [atom("fc0", "C-FC", "F1"), atom("fc1", "C-FC", "F2"), atom("fc2", "C-FC", "F3"),
                   atom("ca0", "C-CA", "F4"), atom("lc0", "C-LC", "F5"), atom("cs0", "R-CS", "F1")])

    def said(outcome, rationale):
        return AtomDecision(outcome=outcome, rationale=rationale)

    a = score_report(t, {"fc0": said("fail", "The report does not mention the 5 A rating."),
                         "fc1": said("fail", "It gives 10 A instead of the 5 A the fact states."),
                         "fc2": said("fail", "报告未提及该灯具的额定电流。"),
                         "ca0": said("fail", "No."),  # neither said: unclassified
                         "lc0": said("fail", "The overview contradicts the findings."),  # not a coverage criterion
                         "cs0": "fail"}).model_copy(update={"task_id": "t1"})
    b = score_report(t, {"fc0": said("fail", "The fact is missing from every section."), "fc1": "pass",
                         "fc2": said("pass", "stated"), "ca0": "fail", "lc0": "pass", "cs0": "pass"}
                     ).model_copy(update={"task_id": "t1"})
    assert a.failed_coverage == {"omission": 2, "contradiction": 1, "unclassified": 1}
    assert b.failed_coverage == {"omission": 1, "contradiction": 0, "unclassified": 1}  # a plain "fail" says nothing
    systems = [system("a", [a]), system("b", [b])]
    board = build_leaderboard(systems, replicates=200)
    got = {r["system"]: r for r in rows(analysis_grids(board, systems, LABELS)["coverage_failures"])}
    assert (got["a"]["failed criteria"], got["a"]["omission (%)"], got["a"]["contradiction (%)"]) == ("4", "50.0", "25.0")
    assert (got["b"]["failed criteria"], got["b"]["omission (%)"], got["b"]["unclassified (%)"]) == ("2", "50.0", "50.0")
    # pooled: 6 failures, 3 omissions (50%), 1 contradiction (16.7%), 2 unclassified (33.3%)
    pooled = got["pooled, all systems"]
    assert (pooled["failed criteria"], pooled["omission (%)"], pooled["contradiction (%)"],
            pooled["unclassified (%)"]) == ("6", "50.0", "16.7", "33.3")
    # contradiction words win over omission words; a rationale with neither is not guessed
    assert failure_kind("It does not say 5 A; it says 10 A, which conflicts with the label.") == "contradiction"
    assert failure_kind("The criterion is not met.") == "unclassified" and failure_kind(None) == "unclassified"
