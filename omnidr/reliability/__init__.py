"""Reliability stage: how far a judge can be trusted (paper App. A.5-A.6, E.4).

Human labels of generated reports (`HumanLabel`, one JSON Lines file per batch, imported into a
run root) and their agreement with each other and with the machine's decisions (`agreement`).
"""

from ._agreement import Agreement, Estimate, GroupAgreement, MachineReport, agreement, fleiss_kappa
from ._calibration import CalibrationOutcome, calibration_grid, run_calibration, systems_line
from ._labels import HumanLabel, read_labels
from ._stability import Stability, stability_of
from ._store import import_labels, machine_reports, stored_labels

__all__ = ["CalibrationOutcome", "calibration_grid", "run_calibration", "systems_line", "Agreement", "Estimate", "GroupAgreement", "HumanLabel", "MachineReport", "Stability", "agreement", "fleiss_kappa", "stability_of",
           "import_labels", "machine_reports", "read_labels", "stored_labels"]
