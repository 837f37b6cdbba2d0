"""J atoms: one judge call per atom (three for gate atoms), against any OpenAI-compatible endpoint.

The judge runs at temperature 0 with a JSON-schema answer. Calls are bounded by a semaphore;
429, 5xx, timeouts, dropped connections and malformed answers are retried with exponential
backoff; a refusal or any other 4xx is final. A vote whose call still fails has no verdict, and
the atom is then `skipped` (excluded from its direction's denominator, counted in the
evaluation). Answered votes go to the judge cache, so re-scoring an unchanged report calls nothing.
"""

import asyncio
import base64
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from omnidr.benchmark import Atom, EvidenceRecord, Task

from ._cache import JudgeCache, vote_key
from ._material import ReportMaterial
from ._models import AtomEvaluation, JudgeIdentity, JudgeVote, Verdict
from ._prompt import (
    MAX_FIGURES,
    PROMPT_VERSION,
    RESPONSE_FORMAT,
    SYSTEM_PROMPT,
    criterion_prompt,
    is_visual,
    material_prompt,
    sections_for,
    user_prompt,
)

MAX_IMAGE_BYTES = 4 << 20
IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp", ".gif": "image/gif"}


class JudgeSettings(BaseModel):
    """How to reach the judge. The key is read from the environment variable `api_key_env`."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    base_url: str = Field(description="OpenAI-compatible base URL, e.g. https://api.openai.com/v1.")
    model: str = Field(min_length=1, description="Model name sent with every request.")
    api_key_env: str = Field("OMNIDR_JUDGE_API_KEY", description="Environment variable holding the API key.")
    concurrency: int = Field(8, ge=1, description="Judge calls in flight at most.")
    timeout_s: float = Field(120.0, gt=0, description="One HTTP call, seconds.")
    max_attempts: int = Field(4, ge=1, description="Calls per vote at most (the first plus retries).")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles per retry, seconds.")
    max_backoff_s: float = Field(30.0, ge=0, description="Longest retry delay, seconds (a Retry-After header may ask for less).")


@dataclass(frozen=True)
class JudgeRequest:
    """One atom and the report it is judged on."""

    atom: Atom
    task: Task | None
    fact: EvidenceRecord | None
    material: ReportMaterial
    report_hash: str
    report_dir: Path | None = None  # for the report's own figures (visual criteria)
    evaluation_dir: Path | None = None  # for the screenshots (visual criteria)


class Judge(Protocol):
    """Anything that answers one vote on one atom."""

    identity: JudgeIdentity

    @property
    def endpoint(self) -> str | None: ...  # an attribute of the judge, read-only or not

    async def vote(self, request: JudgeRequest, index: int) -> JudgeVote: ...

    async def aclose(self) -> None: ...


class AnswerError(ValueError):
    """The judge answered, but not with a usable verdict object."""


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_VERDICTS: dict[str, Verdict] = {"yes": "yes", "no": "no", "n/a": "na", "na": "na", "not applicable": "na"}


def json_object(content: str | None) -> dict:
    """The JSON object of a judge's reply: the structured answer, or the first object in a plain-text reply (an
    endpoint that ignores the schema, a fenced block). AnswerError when there is none."""
    if not content or not content.strip():
        raise AnswerError("empty answer")
    text = _FENCE.sub("", content.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise AnswerError("no JSON object in the answer")
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise AnswerError(f"malformed JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise AnswerError("the answer is not a JSON object")
    return data


def parse_answer(content: str | None, atom_id: str) -> tuple[Verdict, str, str]:
    """(verdict, rationale, quote) from the judge's reply; AnswerError when it is not usable."""
    data = json_object(content)
    raw = data.get("verdict")
    verdict = _VERDICTS.get(raw.strip().lower()) if isinstance(raw, str) else None
    if verdict is None:
        raise AnswerError(f"verdict {raw!r} is not Yes, No or N/A")
    cid = data.get("criterion_id")
    if cid is not None and str(cid).strip() != atom_id:
        raise AnswerError(f"the answer is about criterion {str(cid)[:40]!r}, not {atom_id!r}")
    rationale, quote = data.get("rationale", ""), data.get("quote", "")
    if not isinstance(rationale, str) or not isinstance(quote, str):
        raise AnswerError("rationale and quote must be strings")
    return verdict, rationale.strip()[:1000], quote.strip()[:1000]


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def quote_found(quote: str, material_text: str) -> bool | None:
    """Whether a quoted span occurs in the material (whitespace and case folded); None without a quote."""
    q = _squash(quote.strip().strip("\"'“”‘’"))
    return None if not q else q in _squash(material_text)


def _image_part(path: Path) -> dict | None:
    mime = IMAGE_TYPES.get(path.suffix.lower())
    try:
        if mime is None or not path.is_file() or path.stat().st_size > MAX_IMAGE_BYTES:
            return None
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    except OSError:
        return None
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def _inside(root: Path, rel: str) -> Path | None:
    path = (root / rel).resolve()
    return path if root.resolve() in path.parents else None


def build_messages(request: JudgeRequest) -> tuple[list[dict], str]:
    """The chat messages of one call and the report text they carry (for the quote check). The report's
    material comes first and the criterion last (`PROMPT_VERSION` 3): the calls of one report share a prefix."""
    atom, material = request.atom, request.material
    report_text = material.text_of(sections_for(atom))
    if not is_visual(atom):
        content: list[dict] | str = user_prompt(atom, request.task, material)
    else:  # images first, those every visual criterion of the report gets before those that vary (screenshots)
        parts: list[dict] = []
        if request.report_dir is not None:
            for fig in material.figures[:MAX_FIGURES]:
                path = _inside(request.report_dir, fig.path)
                part = _image_part(path) if path else None
                if part:
                    parts += [{"type": "text", "text": f"Figure {fig.path}, captioned: {fig.caption or '(no caption)'}"}, part]
        if request.evaluation_dir is not None:
            for moment, rel in material.frames.items():
                part = _image_part(request.evaluation_dir / rel)
                if part:
                    parts += [{"type": "text", "text": f"Frame of the source video at {float(moment):.1f} s "
                                                       "(a moment the report cites):"}, part]
            for name in sections_for(atom):
                shot = material.screenshots.get(name)
                part = _image_part(request.evaluation_dir / shot) if shot else None
                if part:
                    parts += [{"type": "text", "text": f"Screenshot of section '{name}':"}, part]
        parts.append({"type": "text", "text": material_prompt(atom, request.task, material)})
        parts.append({"type": "text", "text": criterion_prompt(atom)})
        content = parts
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}], report_text


def _retry_after(exc) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


T = TypeVar("T")


@dataclass
class ChatResult(Generic[T]):
    """What one question to the endpoint gave: the parsed answer (None when every call failed), why not, and
    what the calls cost."""

    value: T | None = None
    error: str = "no call was made"
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


class ChatEndpoint:
    """An OpenAI-compatible chat-completions endpoint as every judge uses it: temperature 0, a JSON-schema answer,
    at most `concurrency` calls in flight, and retries with exponential backoff on 429, 408, 5xx, timeouts,
    dropped connections and unusable answers. A refusal or any other 4xx is final."""

    def __init__(self, settings: JudgeSettings):
        self.settings = settings
        from openai import AsyncOpenAI  # imported here: the package is large and the baselines never need it

        key = os.environ.get(settings.api_key_env) or "no-key"  # local endpoints often need none
        self.client = AsyncOpenAI(base_url=settings.base_url, api_key=key, max_retries=0, timeout=settings.timeout_s)
        self._slots = asyncio.Semaphore(settings.concurrency)

    async def aclose(self) -> None:
        await self.client.close()

    def _delay(self, retry: int, hint: float | None) -> float:
        s = self.settings
        delay = min(s.max_backoff_s, s.backoff_s * 2 ** (retry - 1))
        return min(s.max_backoff_s, hint) if hint is not None else delay

    async def ask(self, messages: list[dict], response_format: dict, parse: Callable[[str | None], T]) -> ChatResult[T]:
        """Ask until `parse` accepts the answer's content (it raises AnswerError otherwise) or the calls run out."""
        from openai import APIConnectionError, APIStatusError, APITimeoutError
        from openai.types.chat import ChatCompletionMessageParam
        from openai.types.shared_params import ResponseFormatJSONSchema

        out: ChatResult[T] = ChatResult()
        hint: float | None = None
        for attempt in range(self.settings.max_attempts):
            if attempt:
                await asyncio.sleep(self._delay(attempt, hint))
            hint = None
            async with self._slots:
                out.calls += 1
                try:
                    response = await self.client.chat.completions.create(
                        model=self.settings.model, messages=cast(list[ChatCompletionMessageParam], messages),
                        temperature=0, response_format=cast(ResponseFormatJSONSchema, response_format),
                    )
                except APITimeoutError:
                    out.error = f"no answer within {self.settings.timeout_s:g} s"
                    continue
                except APIConnectionError as exc:
                    out.error = f"connection failed: {str(exc)[:120]}"
                    continue
                except APIStatusError as exc:
                    out.error = f"HTTP {exc.status_code}: {str(exc.message)[:160]}"
                    if exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408:
                        hint = _retry_after(exc)
                        continue
                    break  # other 4xx: the request itself is wrong; retrying will not help
            usage = getattr(response, "usage", None)
            out.input_tokens += getattr(usage, "prompt_tokens", 0) or 0
            out.output_tokens += getattr(usage, "completion_tokens", 0) or 0
            out.cached_input_tokens += getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
            if not response.choices:
                out.error = "the answer has no choices"
                continue
            choice = response.choices[0]
            refusal = getattr(choice.message, "refusal", None)
            if refusal or choice.finish_reason == "content_filter":
                out.error = f"the judge refused: {(refusal or 'content filter')[:160]}"
                break
            try:
                out.value = parse(choice.message.content)
            except AnswerError as exc:
                out.error = f"unusable answer: {exc}"
                continue
            return out
        return out


class OpenAIJudge:
    """The model judge of J atoms behind an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, settings: JudgeSettings, cache: JudgeCache | None = None):
        self.settings = settings
        self.cache = cache
        self.identity = JudgeIdentity(kind="openai-compatible", model=settings.model, prompt_version=PROMPT_VERSION)
        self.endpoint = settings.base_url
        self.chat = ChatEndpoint(settings)

    async def aclose(self) -> None:
        await self.chat.aclose()

    async def vote(self, request: JudgeRequest, index: int) -> JudgeVote:
        started = time.monotonic()
        key = vote_key(self.identity, request.atom, request.report_hash, index)
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return JudgeVote(verdict=hit["verdict"], rationale=hit["rationale"], quote=hit["quote"],
                             quote_found=hit.get("quote_found"), cached=True,
                             elapsed_s=round(time.monotonic() - started, 3))
        messages, sent_text = build_messages(request)
        result = await self.chat.ask(messages, RESPONSE_FORMAT, lambda content: parse_answer(content, request.atom.id))
        spent = dict(calls=result.calls, input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                     cached_input_tokens=result.cached_input_tokens)
        if result.value is None:
            return JudgeVote(verdict=None, error=result.error, elapsed_s=round(time.monotonic() - started, 3), **spent)
        verdict, rationale, quote = result.value
        found = quote_found(quote, sent_text)
        if self.cache is not None:
            self.cache.put(key, {"verdict": verdict, "rationale": rationale, "quote": quote, "quote_found": found,
                                 "judge": self.identity.key, "atom": request.atom.id, "vote": index})
        return JudgeVote(verdict=verdict, rationale=rationale, quote=quote, quote_found=found,
                         elapsed_s=round(time.monotonic() - started, 3), **spent)


def _decide(votes: list[JudgeVote], polarity: str) -> tuple[Verdict, bool]:
    """The majority verdict of the votes and whether there was a majority. Without one (three
    different answers), the verdict that fails the atom is taken: a gate is not passed on a split."""
    counts = Counter(v.verdict for v in votes)
    verdict, n = counts.most_common(1)[0]
    if 2 * n > len(votes):
        return verdict, True  # type: ignore[return-value]
    return ("no" if polarity == "yes" else "yes"), False


async def judge_atom(judge: Judge, request: JudgeRequest, votes_needed: int) -> AtomEvaluation:
    """Ask for `votes_needed` votes and decide the atom."""
    atom = request.atom
    started = time.monotonic()
    votes = list(await asyncio.gather(*(judge.vote(request, i) for i in range(votes_needed))))
    common = dict(
        atom_id=atom.id, direction=atom.direction, evaluator="J", polarity=atom.polarity.value,
        gate=votes_needed > 1, votes=votes, elapsed_s=round(time.monotonic() - started, 3),
        input_tokens=sum(v.input_tokens for v in votes), output_tokens=sum(v.output_tokens for v in votes),
    )
    failed = [v for v in votes if v.verdict is None]
    if failed:
        why = f"{len(failed)} of {len(votes)} judge vote(s) failed: {failed[0].error}"
        return AtomEvaluation(outcome="skipped", verdict=None, rationale=why, error=why, **common)
    verdict, majority = _decide(votes, atom.polarity.value)
    deciding = next((v for v in votes if v.verdict == verdict), votes[0])
    rationale = deciding.rationale if majority else f"no majority among the votes ({', '.join(str(v.verdict) for v in votes)}); decided as a fail"
    outcome = "na" if verdict == "na" else ("pass" if verdict == atom.polarity.value else "fail")
    return AtomEvaluation(outcome=outcome, verdict=verdict, rationale=rationale, quote=deciding.quote if majority else "", **common)
