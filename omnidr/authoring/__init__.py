"""Authoring stage: new tasks built the way the paper built its own, Audited Rubric Construction S0-S6 (paper
Sec. 3.2, App. E.1-E.4), with the evidence agents running in the sandbox (`omnidr author`)."""

from ._agents import ModelEndpoint
from ._demo_script import demo_script
from ._models import ROUTES, Attrition, AuthoringReport, Budgets, ReviewLabel, ReviewRound, TaskDraft
from ._package import Package, TaskRequest, init_package
from ._review import read_review_labels, review_package, review_round
from ._run import author_all

__all__ = ["ROUTES", "Attrition", "AuthoringReport", "Budgets", "ModelEndpoint", "Package", "ReviewLabel", "ReviewRound",
           "TaskDraft", "TaskRequest", "author_all", "demo_script", "init_package", "read_review_labels", "review_package",
           "review_round"]
