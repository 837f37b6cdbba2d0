"""Models shared by the host (`omnidr`) and the code that runs inside the sandbox containers: every record that
crosses the container boundary has its one definition here, and the host reads the containers' files through
them. Only pydantic is needed, so that the gateway and proxy images stay small.

- `_policy`: the attempt's budget, provider-side tools policy, model APIs, the search door;
- `_network`: the egress proxy's mode and `network.jsonl` / `provider_web.jsonl` events;
- `_corpus`: a web corpus's `corpus.json` (replay, record, a snapshot's `web/`);
- `_gateway`: `gateway.jsonl` exchanges and `gateway_state.json`;
- `_report`: the report's `window.DATA` and its contract version;
- `_answer`: a short answer's `answer.json`, its protocol (`/input/protocol.json`), its research and final-answer
  prompts, and the gateway's finalization stage;
- `_artifacts`: the agent's artifact folder (`/output/artifacts/`) and its download index;
- `_plain`: the names and plain values of the others that need no pydantic (file names, task kinds, the
  report contract's vocabularies);
- `_pricing`: the run's price for its model (`ModelPricing`), which the gateway charges each exchange at;
- `_mcq`: a multiple-choice question's inputs (`/input/question.json`, `/input/media/`) and the direct runner's
  prompt.

The names load lazily (PEP 562): importing one loads its own module only, so that a short-lived process in a
container (a skill call, the direct agent) pays for the models it uses, not for all of them.
"""

# ruff: noqa: F401  (the TYPE_CHECKING imports are the exports the type checker reads; `__all__` is computed)
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the type checker sees them; at run time `__getattr__` loads each on first use
    from sandbox.models._answer import (
        FINAL_ANSWER_PROMPT,
        FINALIZATION_RETRY_NOTE,
        PROTOCOL_FILE,
        RESEARCH_PROMPT,
        TERMINATION_REASONS,
        AnswerFile,
        AnswerSource,
        Compaction,
        FinalizationResult,
        FinalizeRequest,
        ShortAnswerProtocol,
        TerminationReason,
        read_answer_file,
    )
    from sandbox.models._artifacts import (
        ArtifactRecord,
    )
    from sandbox.models._corpus import (
        CORPUS_FILE,
        CorpusPage,
        WebCorpus,
    )
    from sandbox.models._gateway import (
        GATEWAY_LOG,
        GATEWAY_STATE,
        AttemptOpen,
        BudgetName,
        GatewayExchange,
        GatewayState,
        Outcome,
        Phase,
        RouteName,
        ScopeReport,
        SpendCounts,
        TokenUsage,
    )
    from sandbox.models._mcq import (
        MCQ_PROMPT,
        MEDIA_DIR,
        MEDIA_MANIFEST,
        MODALITIES,
        OFFICIAL_TEMPERATURE,
        OPTION_LETTERS,
        QUESTION_FILE,
        WINDOW_MODES,
        InputProtocol,
        McqQuestion,
        MediaInputs,
        SampledFrame,
        WindowMode,
    )
    from sandbox.models._mcq import Modality as McqModality
    from sandbox.models._network import (
        NETWORK_EVENT,
        NETWORK_LOG,
        PROVIDER_WEB_LOG,
        BlockReason,
        ModelPolicy,
        NetworkEvent,
        NetworkLog,
        ProviderAction,
        ProviderEvent,
        ProviderResult,
        ProxyMode,
        RequestEvent,
        Source,
        TunnelEvent,
        WebEvent,
        read_network_log,
        read_web_log,
    )
    from sandbox.models._plain import (
        ANSWER_FILE,
        ARTIFACT_INDEX,
        ARTIFACTS_DIR,
        CONTRACT_VERSION,
        GOALS,
        MCQ_KIND,
        SHORT_ANSWER_KIND,
        SOURCE_TYPES,
        TASK_KIND_ENV,
        RelationType,
        data_js_body,
    )
    from sandbox.models._policy import (
        API_FAMILY,
        API_LABEL,
        OPEN_QUESTION_TAG,
        PROVIDER_TOOL_KINDS,
        SEARCH_KEY_HEADER,
        Budget,
        ModelApi,
        ProviderToolKind,
        ProviderToolsPolicy,
        SearchDoor,
        SearchProvider,
        ToolPolicy,
        translation_label,
        upstream_api,
    )
    from sandbox.models._pricing import (
        ModelPricing,
        PriceTier,
        TieredRate,
    )
    from sandbox.models._report import (
        Anchor,
        Claim,
        Finding,
        ReportData,
        ReportMedia,
        ReportVideo,
        SourceRecord,
        TimelineSegment,
    )

_EXPORTS: dict[str, tuple[str, str]] = {}
"""Exported name -> (module, attribute in it)."""
for _module, _names in (
    ("_answer", "FINAL_ANSWER_PROMPT FINALIZATION_RETRY_NOTE PROTOCOL_FILE RESEARCH_PROMPT TERMINATION_REASONS "
     "AnswerFile AnswerSource Compaction FinalizationResult FinalizeRequest ShortAnswerProtocol TerminationReason "
     "read_answer_file"),
    ("_artifacts", "ArtifactRecord"),
    ("_corpus", "CORPUS_FILE CorpusPage WebCorpus"),
    ("_gateway", "GATEWAY_LOG GATEWAY_STATE AttemptOpen BudgetName GatewayExchange GatewayState Outcome Phase "
     "RouteName ScopeReport SpendCounts TokenUsage"),
    ("_mcq", "MCQ_PROMPT MEDIA_DIR MEDIA_MANIFEST MODALITIES OFFICIAL_TEMPERATURE OPTION_LETTERS QUESTION_FILE "
     "WINDOW_MODES InputProtocol McqQuestion MediaInputs SampledFrame WindowMode"),
    ("_network", "NETWORK_EVENT NETWORK_LOG PROVIDER_WEB_LOG BlockReason ModelPolicy NetworkEvent NetworkLog "
     "ProviderAction ProviderEvent ProviderResult ProxyMode RequestEvent Source TunnelEvent WebEvent "
     "read_network_log read_web_log"),
    ("_policy", "API_FAMILY API_LABEL OPEN_QUESTION_TAG PROVIDER_TOOL_KINDS SEARCH_KEY_HEADER Budget ModelApi "
     "ProviderToolKind ProviderToolsPolicy SearchDoor SearchProvider ToolPolicy translation_label "
     "upstream_api"),
    ("_plain", "ANSWER_FILE ARTIFACT_INDEX ARTIFACTS_DIR CONTRACT_VERSION GOALS MCQ_KIND SHORT_ANSWER_KIND SOURCE_TYPES "
     "TASK_KIND_ENV RelationType data_js_body"),
    ("_pricing", "ModelPricing PriceTier TieredRate"),
    ("_report", "Anchor Claim Finding ReportData ReportMedia ReportVideo SourceRecord TimelineSegment"),
):
    _EXPORTS.update({name: (_module, name) for name in _names.split()})
del _module, _names
_EXPORTS["McqModality"] = ("_mcq", "Modality")

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value  # later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
