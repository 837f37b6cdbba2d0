"""The files of an authoring package (`<package>/authoring/`): the task draft, each stage's record, the evidence maps,
the candidates and their screening, the human review labels and the attrition trace. One model per file."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omnidr.benchmark import EvidenceRecord, Family, Language, QueryForm

# The six web routes of App. E.2, each its own isolated S1b session, in this order.
ROUTES: dict[str, str] = {
    "entities": "named entities: the products, places, organisations and objects the request and its topic name",
    "provenance": "primary provenance: the original makers, data sheets, standards bodies and first publications",
    "concepts": "concepts and standards: the rules, definitions and mechanisms the topic depends on",
    "people": "relevant people: the experts, authors and practitioners behind the claims",
    "analogous": "analogous cases: comparable products, incidents, demonstrations and practices",
    "timelines": "event timelines: recalls, notices, revisions and updates, with their dates",
}


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Budgets(Record):
    """What the evidence agents may spend (S0 fixes it; every stage's run records it)."""

    wall_time_s: float = Field(900.0, gt=0, description="Wall-clock limit of one evidence-agent attempt, seconds.")
    max_rounds: int = Field(4, ge=1, description="S1b round limit (App. E.2: 'or at the configured round limit').")
    new_claims_below: int = Field(1, ge=0, description="S1b saturation: a round is saturated when its new relevant "
                                  "claims are fewer than this (and its new source domains fewer than `new_domains_below`).")
    new_domains_below: int = Field(1, ge=0, description="S1b saturation: new source domains fewer than this.")
    high_volume_cap: int | None = Field(None, ge=1, description="S4: at most this many atoms in a high-volume "
                                        "direction (None: the snapshot's kappa).")
    error_threshold: float = Field(0.5, ge=0, le=1, description="S6: a package whose reviewed items are incorrect "
                                   "(by majority) in more than this share is excluded, not repaired.")


class TaskDraft(Record):
    """S0's task skeleton (`authoring/task-draft.json`): what the later stages fill."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Task id (the package's task folder).")
    request: str = Field(min_length=1, description="The user request, in the task language.")
    language: Language = Field(description="Language of the video, the request and the expected report.")
    family: Family = Field(description="Task family.")
    subcategory: str = Field(description="Subcategory id from the taxonomy.")
    query_form: QueryForm = Field(description="How the request was formed.")
    video_url: str = Field(description="Where the video came from (a URL, or the local file's path).")
    routes: list[str] = Field(description="The S1b routes this task allows (App. E.2's six by default).")
    budgets: Budgets = Field(default_factory=Budgets, description="The stages' budgets.")


class VideoFact(Record):
    """One S1a observation kept in the video evidence map."""

    key: str = Field(description="'<session>/<record id>': the window session and the agent's evidence record.")
    claim: str
    type: str = Field(description="Fact type (speech, visible_text, visual, entity, parameter, procedure, ...).")
    start_s: float = Field(description="Start of the time reference, seconds.")
    end_s: float = Field(description="End of the time reference, seconds.")
    window: int = Field(description="Index of the T_win window the time reference lies in (start_s // T_win).")
    excerpt: str = Field("", description="The transcript or frame observation the agent quoted.")


class WebClaim(Record):
    """One S1b claim kept in the web evidence map."""

    route: str
    round: int
    key: str = Field(description="The agent's evidence record id within its attempt.")
    claim: str
    type: str
    url: str = Field(description="Canonical URL (lower-case host, no fragment).")
    kind: Literal["webpage", "document", "image", "video"]
    tier: Literal["primary", "secondary", "tertiary"]
    date: str | None = None
    quote: str = Field(description="The supporting quotation, as the agent copied it from the page.")
    quote_checked: bool = Field(description="The agent's tool found the quotation verbatim in the fetched page.")


class Rejected(Record):
    """Something a stage did not keep, and why."""

    item: str = Field(description="What was left out (an evidence record key, a candidate id).")
    reason: str = Field(description="Why, in words a reviewer can check against the files.")


class RoundRecord(Record):
    """One S1b round: what it found that was new, and whether it was saturated."""

    round: int
    claims: int = Field(description="Claims the round's attempts recorded.")
    new_claims: int = Field(description="Claims not seen in an earlier round.")
    new_domains: int = Field(description="Source domains not seen in an earlier round.")
    saturated: bool


class VideoMap(Record):
    facts: list[VideoFact]
    rejected: list[Rejected] = Field(default_factory=list)
    window_s: float
    attempts: list[str] = Field(description="The attempt folders (one per window), relative to the package.")


class WebMap(Record):
    claims: list[WebClaim]
    rejected: list[Rejected] = Field(default_factory=list)
    rounds: list[RoundRecord]
    stopped: str = Field(description="Why collection stopped: 'saturated' or 'round limit'.")
    attempts: list[str] = Field(description="The attempt folders, relative to the package.")


class Provenance(Record):
    """Where a library record came from: each evidence record merged into it, with its own wording."""

    stage: Literal["S1a", "S1b", "S1c"]
    key: str = Field(description="The map item (route/round/key for S1b).")
    wording: str


class LibraryEntry(Record):
    """One reconciled record: the Table 14 record the package ships, and its provenance (S1c)."""

    record: EvidenceRecord
    provenance: list[Provenance]
    why: str = Field(description="Why the verification state is what it is (the rule of App. E.2).")


class Reconciliation(Record):
    entries: list[LibraryEntry]
    merges: list[list[str]] = Field(description="Groups of map items merged into one record.")
    conflicts: list[list[str]] = Field(description="Conflict edges [a, b] between library records.")


class Candidate(Record):
    """An S2 candidate criterion: an atom without its difficulty (S3 computes it)."""

    id: str
    direction: str
    criterion: str
    evaluator: Literal["J", "M"]
    probe: dict | None = None
    polarity: Literal["yes", "no"] = "yes"
    fact_id: str | None = None
    composes: list[str] = Field(default_factory=list)
    evidence_note: str = ""
    impact: str | None = None
    coverage: bool | None = None


class Screening(Record):
    kept: list[str]
    removed: list[Rejected]
    difficulty: dict[str, str] = Field(description="Candidate id -> computed level and why.")


class Assembly(Record):
    placed: dict[str, list[str]] = Field(description="Direction id -> atom ids placed in its slot.")
    na_reasons: dict[str, str]
    capped: list[Rejected]
    errors: list[str] = Field(description="`snapshot validate` errors of the assembled package.")
    warnings: list[str]


class ReviewLabel(Record):
    """One line of a human review labels file (App. A.5): a rater's label of one fact or criterion."""

    round: int = Field(ge=1, description="Validation round.")
    rater: str = Field(min_length=1)
    item: str = Field(description="A fact id or an atom id of the package.")
    label: Literal["correct", "incorrect"]
    note: str = ""


class ReviewRound(Record):
    """Human review of the package in one round (App. A.5)."""

    round: int
    items: int = Field(description="Facts and criteria reviewed.")
    judgments: int = Field(description="Labels given.")
    correct_items: int = Field(description="Items whose majority label is 'correct'.")
    item_correctness: float = Field(description="correct_items / items.")
    three_rater_items: int = Field(description="Items labelled by exactly three raters.")
    unanimous_items: int = Field(description="Of those, items all three raters labelled alike.")
    unanimity: float | None = Field(description="unanimous_items / three_rater_items (None without such items).")
    incorrect_facts: list[str]
    incorrect_criteria: list[str]
    ties: list[str] = Field(description="Items whose labels tie (no majority): treated as incorrect.")


class Attrition(Record):
    """One row of the attrition trace: a stage's or a round's counts and decision."""

    step: str = Field(description="S2, S3, S4, or 'S5/S6 round N'.")
    candidates: int
    accepted: int
    repaired: int = 0
    excluded: int = 0
    decision: str = ""


class AuthoringReport(Record):
    """`authoring/report.json`: how the package came to be, and its fate."""

    task_id: str
    status: Literal["assembled", "frozen", "excluded", "invalid"] = Field(description=(
        "assembled: built, not (yet) accepted by review; frozen: accepted, MANIFEST.json written (its snapshot id is "
        "the package's); excluded: review found too many or persistent errors; invalid: static checks fail."))
    attrition: list[Attrition]
    reviews: list[ReviewRound] = Field(default_factory=list)
    routed: list[dict] = Field(default_factory=list, description="Each finding and the stage it went back to.")
    note: str = ""
