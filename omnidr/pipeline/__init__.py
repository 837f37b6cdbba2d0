"""End-to-end stage: `omnidr eval`, `omnidr compare` (run mode), `omnidr archive`, `omnidr rescore`."""

from ._checks import EvalResult, SnapshotCheck, StageResult, check_snapshot, freeze, full_validation
from ._cli import eval_options, eval_request, run_with_progress
from ._eval import EvalOutcome, EvalRequest, judge_key, judge_settings, run_eval
from ._results import EvalConfig, read_eval_config
from ._specs import Endpoint, SystemSpec, make_system, parse_budget, parse_judge, parse_model, parse_system, require_key

__all__ = [
    "Endpoint", "EvalConfig", "EvalOutcome", "EvalRequest", "EvalResult", "SnapshotCheck", "StageResult", "SystemSpec",
    "check_snapshot", "eval_options", "eval_request", "freeze", "full_validation", "judge_key", "judge_settings",
    "make_system", "parse_budget", "parse_judge", "parse_model", "parse_system", "read_eval_config", "require_key",
    "run_eval", "run_with_progress",
]
