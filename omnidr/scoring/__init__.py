"""Scoring: one report's Omni-ART score from its decisions and the statistics across reports; for short-answer
tasks (OpenDS-World) and multiple-choice tasks (VideoOdyssey), the accuracy leaderboard with its breakdowns and
process statistics.

Pure and fast: no Docker, browser, network or judge. Everything is re-computable from a rubric
tree and the saved atom decisions (paper Sec. 3.3, App. A.4 and F.2), or from the saved answer
outcomes (paper 002, Sec. 3, App. D, E).
"""

from ._analysis import BREAKDOWNS, TABLE_NAMES, ProcessMedians, analysis_grids
from ._answer_models import BREAKDOWNS as ANSWER_BREAKDOWNS
from ._answer_models import (
    MCQ_BREAKDOWNS,
    TOOL_CATEGORY_ORDER,
    AnswerLeaderboard,
    AnswerOutcome,
    AnswerProcess,
    AnswerSystem,
    AnswerSystemResult,
    GroupAccuracy,
    LeaveOneVideoOut,
    ToolCategory,
    ToolUse,
    VideoHoldout,
)
from ._answer_render import ANSWER_TABLE_NAMES, MCQ_TABLE_NAMES, answer_grids, answer_markdown
from ._answers import (
    BREAKDOWN_GROUPS,
    build_answer_leaderboard,
    compare_answer_systems,
    leave_one_video_out,
    mcq_task_groups,
    task_groups,
)
from ._decisions import AtomDecision, Decisions, Outcome
from ._errors import ScoringInputError
from ._files import (
    SYSTEM_FILE,
    read_decisions,
    read_hyperparameters,
    read_model,
    read_rubric,
    read_system,
    read_systems,
    snapshot_trees,
)
from ._leaderboard import DEFAULT_SEED, bootstrap_counts, build_leaderboard, compare_systems, paired_comparisons
from ._na_order import FactOrder, NaOrderCheck, check_na_order
from ._reaggregate import default_variants, score_systems, sensitivity_analysis, variant
from ._render import (
    Grid,
    by_folder,
    comparisons_grid,
    leaderboard_grids,
    na_order_grid,
    pct,
    pts,
    report_grids,
    report_notes,
)
from ._report import score_report, settings_from
from ._report_models import (
    DifficultyCount,
    DimensionScore,
    DirectionScore,
    GuardStep,
    NaGuard,
    ReportScore,
    ScoringSettings,
)
from ._tables import (
    Leaderboard,
    PairedComparison,
    Sensitivity,
    SensitivityRow,
    SensitivityVariant,
    SystemDecisions,
    SystemKey,
    SystemResult,
    SystemScores,
)
from ._tool_use import TOOL_CATEGORIES, tool_category, tool_use

__all__ = [
    "ANSWER_BREAKDOWNS", "ANSWER_TABLE_NAMES", "BREAKDOWN_GROUPS", "TOOL_CATEGORIES", "TOOL_CATEGORY_ORDER",
    "AnswerLeaderboard", "AnswerOutcome", "AnswerProcess", "AnswerSystem", "AnswerSystemResult", "GroupAccuracy",
    "ToolCategory", "ToolUse", "answer_grids", "answer_markdown", "build_answer_leaderboard", "compare_answer_systems",
    "task_groups", "tool_category", "tool_use", "MCQ_BREAKDOWNS", "MCQ_TABLE_NAMES", "LeaveOneVideoOut", "VideoHoldout",
    "leave_one_video_out", "mcq_task_groups",
    "BREAKDOWNS", "TABLE_NAMES", "ProcessMedians", "analysis_grids",
    "DEFAULT_SEED", "Grid", "by_folder", "comparisons_grid", "pct", "pts", "leaderboard_grids", "na_order_grid", "report_grids", "report_notes",
    "AtomDecision", "Decisions", "DifficultyCount", "DimensionScore", "DirectionScore", "FactOrder",
    "GuardStep", "Leaderboard", "NaGuard", "NaOrderCheck", "Outcome", "PairedComparison", "ReportScore",
    "SYSTEM_FILE", "ScoringInputError", "ScoringSettings", "Sensitivity", "SensitivityRow", "SensitivityVariant", "SystemDecisions",
    "SystemKey", "SystemResult", "SystemScores", "bootstrap_counts", "build_leaderboard",
    "check_na_order", "compare_systems", "default_variants",
    "paired_comparisons", "read_decisions", "read_hyperparameters", "read_model", "read_rubric", "read_system", "read_systems", "score_report",
    "score_systems", "sensitivity_analysis", "settings_from", "snapshot_trees", "variant",
]
