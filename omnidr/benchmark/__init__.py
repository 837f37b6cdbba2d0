"""The benchmark snapshot: tasks, fact libraries, Omni-ART trees, hyperparameters, report contract."""

from sandbox.models import Compaction, ShortAnswerProtocol  # the short-answer protocol crosses into the sandbox

from ._brief import evidence_brief
from ._calibration import CALIBRATION_FILE, Calibration, CalibrationScores, calibration_problem
from ._contract import (
    ReportCheck,
    ReportContract,
    ReportDataError,
    check_report,
    data_schema,
    is_skeleton,
    read_report_data,
    report_problem,
)
from ._evidence import Derived, atom_facts, derive_difficulty, derive_verifications, registrable_domain
from ._facts import (
    EvidenceRecord,
    EvidenceSource,
    FactLibrary,
    Origin,
    Relation,
    SourceKind,
    SourceTier,
    Verification,
    VideoRef,
)
from ._facts import FactType as EvidenceFactType
from ._hyperparameters import EXTERNAL, Hyperparameters, ReferenceBudgets
from ._kinds import BUILT_KINDS, TaskFormat, kind_name, register_task_format, task_format
from ._manifest import MANIFEST_FILE, ManifestDiff, SnapshotManifest, diff_files, hash_files
from ._mcq import (
    CCL_BINS,
    CHANCE_ACCURACY,
    DURATION_BINS,
    OFFICIAL_FRAMES,
    OFFICIAL_MODES,
    OTHER_DURATION,
    VIDEOS_FILE,
    AudioType,
    CclWindow,
    InputSetting,
    McqProtocol,
    McqSubtitles,
    McqTask,
    McqVideo,
    McqVideos,
    QuestionDimension,
    ReleaseQuestionRef,
    ReleaseVideoRef,
    Subset,
    ccl_bin,
    certificate_bin,
    duration_bin,
    parse_time_reference,
)
from ._operations import ValidationReport, freeze_snapshot, open_snapshot, validate_snapshot, verify_snapshot
from ._release import RELEASE_DENYLIST
from ._review import REVIEW_FILE, WarningReview, WarningReviews
from ._rubric import (
    Atom,
    AtomEvaluator,
    Difficulty,
    Dimension,
    Direction,
    DirectionInventory,
    GateLogic,
    Polarity,
    ProbeCall,
    RubricTree,
    direction_inventory,
    probe_catalog,
)
from ._short_answer import (
    DURATION_GROUPS,
    FORMAT_CATEGORIES,
    AccessType,
    Domain,
    Modality,
    ShortAnswerTask,
    duration_group,
    format_category,
)
from ._snapshot import HYPERPARAMETERS_FILE, SNAPSHOT_CORPUS_FILE, SNAPSHOT_FILE, Problem, Snapshot, TaskBundle
from ._snapshot_info import SnapshotInfo
from ._task import Captions, Language, QueryForm, SourceVideo, Task
from ._taxonomy import Family, taxonomy
from ._validate import sha256_file, subjective_wording

__all__ = [
    "SNAPSHOT_FILE", "CCL_BINS", "CHANCE_ACCURACY", "VIDEOS_FILE", "AudioType", "CclWindow", "InputSetting",
    "McqProtocol", "McqSubtitles", "McqTask", "McqVideo", "McqVideos", "QuestionDimension", "Subset", "ccl_bin",
    "DURATION_BINS", "OTHER_DURATION", "OFFICIAL_FRAMES", "OFFICIAL_MODES", "ReleaseQuestionRef", "ReleaseVideoRef", "certificate_bin", "duration_bin", "parse_time_reference",
    "HYPERPARAMETERS_FILE", "BUILT_KINDS", "TaskFormat", "kind_name", "register_task_format", "task_format", "DURATION_GROUPS", "FORMAT_CATEGORIES", "AccessType", "Compaction", "Domain", "Modality",
    "ShortAnswerProtocol", "ShortAnswerTask", "duration_group", "format_category",
    "CALIBRATION_FILE", "evidence_brief", "REVIEW_FILE", "Calibration", "CalibrationScores", "WarningReview", "WarningReviews", "calibration_problem",
    "RELEASE_DENYLIST", "Atom", "Difficulty", "Dimension", "Direction", "DirectionInventory",
    "EvidenceRecord", "EvidenceSource", "FactLibrary", "Family", "GateLogic", "Hyperparameters", "Language",
    "MANIFEST_FILE", "ManifestDiff", "diff_files", "hash_files", "Origin", "Polarity", "Problem", "QueryForm", "ReferenceBudgets", "EXTERNAL", "ReportContract", "ReportDataError", "is_skeleton", "read_report_data", "report_problem", "ReportCheck", "check_report",
    "RubricTree", "SNAPSHOT_CORPUS_FILE", "Snapshot", "SnapshotInfo", "SnapshotManifest", "Captions", "SourceVideo", "Task", "TaskBundle",
    "ValidationReport", "Verification", "VideoRef", "data_schema", "direction_inventory",
    "freeze_snapshot", "open_snapshot", "probe_catalog", "sha256_file", "taxonomy", "validate_snapshot",
    "verify_snapshot", "Derived", "atom_facts", "derive_difficulty", "derive_verifications", "registrable_domain",
    "subjective_wording", "EvidenceFactType", "SourceKind", "SourceTier", "Relation", "AtomEvaluator", "ProbeCall",
]
