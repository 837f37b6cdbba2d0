"""End-to-end stage: `omnidr eval`, `omnidr compare` (run mode), `omnidr archive`, `omnidr rescore`."""

from ._checks import EvalResult, SnapshotCheck, StageResult, check_snapshot, freeze, full_validation
from ._eval import EvalOutcome, EvalRequest, run_eval
from ._specs import Endpoint, SystemSpec, make_system, parse_budget, parse_judge, parse_model, parse_system

__all__ = [
    "Endpoint", "EvalOutcome", "EvalRequest", "EvalResult", "SnapshotCheck", "StageResult", "SystemSpec",
    "check_snapshot", "freeze", "full_validation", "make_system", "parse_budget", "parse_judge", "parse_model", "parse_system", "run_eval",
]
