"""The sandbox's names and plain values: file names, task-kind values, the report contract's fixed vocabularies,
and the parser of a report's data file. Standard library only, so that a short-lived process (a skill call, the
direct agent) can read them without loading pydantic; the model modules import them from here.
"""

import re
from enum import Enum

ANSWER_FILE = "answer.json"
"""Name of the answer file in the agent's output folder (`/output/answer.json`)."""

TASK_KIND_ENV = "OMNIDR_TASK_KIND"
"""The agent container's variable naming the task kind: `SHORT_ANSWER_KIND`, or absent / `report`."""

SHORT_ANSWER_KIND = "short_answer"
"""`OMNIDR_TASK_KIND` of a short-answer task: the value of `omnidr.benchmark.TaskKind.short_answer` (the sandbox
cannot import the host's enum; a test keeps the two equal)."""

ARTIFACTS_DIR = "artifacts"
"""Name of the artifact folder in the agent's output folder (`/output/artifacts/`)."""

ARTIFACT_INDEX = "artifacts.jsonl"
"""The index in the artifact folder: one `ArtifactRecord` a line, in download order."""

MCQ_KIND = "mcq"
"""`OMNIDR_TASK_KIND` of a multiple-choice question: the value of `omnidr.benchmark.TaskKind.mcq`."""

CONTRACT_VERSION = "omnidr-report-1"
"""The contract version `window.DATA.contract` names; a snapshot's `contract/contract.json` carries it too."""

GOALS = ("explain", "verify", "compare", "update", "apply")
"""What an anchor's research is for (paper Sec. 2.2)."""

SOURCE_TYPES = ("web", "video", "document", "image")
"""Kinds of source records a report cites."""

_ASSIGNMENT = re.compile(r"^\s*window\.DATA\s*=\s*(?P<body>.*?)\s*;?\s*$", re.DOTALL)


def data_js_body(text: str) -> str | None:
    """The JSON of a data file's `window.DATA = {...};` assignment, or None when the file is not one."""
    match = _ASSIGNMENT.match(text)
    return match.group("body") if match else None


class RelationType(str, Enum):
    """The six relations that link external evidence to the video (Sec. 2.2)."""

    support = "support"
    contradiction = "contradiction"
    update = "update"
    explanation = "explanation"
    comparison = "comparison"
    application = "application"
