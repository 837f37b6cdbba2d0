"""A fact's verification state and an atom's difficulty, derived from evidence structure.

The paper states both as rules, not as annotations: App. E.2, "a record is verified when it has at least
two independent domains or a suitable primary source. It is single-source when it has one source, disputed
when supported records conflict, and unavailable when no usable source is found"; App. E.3, "difficulty is
computed from evidence structure ... L0 requires one source-video fact, L1 requires external evidence, L2
requires independent verification or conflict handling, and L3 requires composition across distinct facts".
`snapshot validate` derives both here and warns where a snapshot declares something else.

Where the paper leaves the details open, this module decides (the README's open choices list them):
- Domains are registrable domains under the Public Suffix List with its private section (tldextract's bundled
  snapshot, never fetched): `a.example.org` and `b.example.org` are one domain, `x.github.io` and
  `y.github.io` two. A host without a registrable domain (an IP address) is its own domain.
- A record's sources are its own plus those of every record that supports it (a `support` relation: the
  reconciled provenance of App. E.2). A video fact's own source is the source video, one source at the video
  URL's domain; the video is not a "suitable primary source" for itself, so a video fact nobody confirms is
  single-source.
- A conflict edge (`conflicts_with`, either direction) between two records that both have a usable source
  makes both disputed.
- An atom's evidence is its `fact_id` and the facts it `composes` with. Two or more distinct facts: L3. One
  fact: L2 when the criterion is a cross-source verification or conflict check (directions C-XV and C-UC,
  whose definitions are exactly that) or when a judged content criterion reads a disputed fact (the report
  has to handle the conflict to state it); otherwise L1 for a web fact and L0 for a video fact. A citation or
  presentation criterion on a disputed fact asks how the claim is cited or shown, not how the conflict is
  handled, and a machine check reads no claim: a conflict raises neither. An atom without a fact (a presentation check) has no evidence
  level to derive.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ._facts import EvidenceRecord, FactLibrary, Origin, SourceTier, Verification
from ._rubric import Atom, AtomEvaluator, Difficulty, Dimension, direction_inventory

if TYPE_CHECKING:
    import tldextract

# Directions whose criteria ask for independent verification or conflict handling (App. A.2: C-XV checks
# video claims against independent external sources; C-UC keeps disagreements and missing evidence visible).
VERIFICATION_DIRECTIONS = frozenset({"C-XV", "C-UC"})


@cache
def _extractor() -> "tldextract.TLDExtract":
    import tldextract  # only `snapshot validate` needs the suffix list

    return tldextract.TLDExtract(cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True)


def registrable_domain(url: str) -> str:
    """The registrable domain of `url` (`en.example-wiki.org` -> `example-wiki.org`); the host itself where
    the Public Suffix List gives none (an IP address, `localhost`)."""
    host = (urlsplit(url).hostname or url).lower().rstrip(".")
    return _extractor()(host).top_domain_under_public_suffix or host


def _sources(rec: EvidenceRecord, video_url: str) -> list[tuple[str, bool]]:
    """(domain, is primary) for each of the record's own sources; a video fact's is the source video."""
    if rec.origin is Origin.video:
        return [(registrable_domain(video_url), False)]
    return [(registrable_domain(s.url), s.tier is SourceTier.primary) for s in rec.sources]


@dataclass(frozen=True)
class Derived:
    """A state the evidence decides, and why, in words a reviewer can check against the files."""

    state: Verification
    why: str


def derive_verifications(library: FactLibrary, video_url: str) -> dict[str, Derived]:
    """Each record's verification state by the rule of App. E.2 (see the module docstring)."""
    by_id = {r.id: r for r in library.facts}
    sources = {r.id: _sources(r, video_url) for r in library.facts}
    supported = {fid: list(s) for fid, s in sources.items()}
    for rec in library.facts:
        for rel in rec.relations:
            if rel.type.value == "support" and rel.target in supported and rel.target != rec.id:
                supported[rel.target] += sources[rec.id]
    conflicts: dict[str, set[str]] = {r.id: set() for r in library.facts}
    for rec in library.facts:
        for other in rec.conflicts_with:
            if other in by_id and other != rec.id:
                conflicts[rec.id].add(other)
                conflicts[other].add(rec.id)
    out: dict[str, Derived] = {}
    for fid, found in supported.items():
        domains = sorted({domain for domain, _ in found})
        primary = sorted({domain for domain, is_primary in found if is_primary})
        rivals = sorted(o for o in conflicts[fid] if supported[o])
        if not found:
            out[fid] = Derived(Verification.unavailable, "it has no usable source")
        elif rivals:
            out[fid] = Derived(Verification.disputed, f"it conflicts with supported record(s) {', '.join(rivals)}")
        elif primary:
            out[fid] = Derived(Verification.verified, f"it has a primary source ({primary[0]})")
        elif len(domains) >= 2:
            out[fid] = Derived(Verification.verified, f"its sources span {len(domains)} independent domains "
                               f"({', '.join(domains)})")
        else:
            out[fid] = Derived(Verification.single_source, f"its only source domain is {domains[0]} and no "
                               "source is primary")
    return out


def atom_facts(atom: Atom) -> list[str]:
    """The distinct facts an atom's criterion rests on: its `fact_id`, then the facts it composes with."""
    ids: Iterable[str] = ([atom.fact_id] if atom.fact_id else []) + list(atom.composes)
    return list(dict.fromkeys(ids))


def derive_difficulty(atom: Atom, origins: dict[str, Origin],
                      states: dict[str, Verification]) -> tuple[Difficulty, str] | None:
    """The atom's evidence level by the rule of App. E.3 (see the module docstring), and why; None without a
    fact or when a fact it names is unknown (an error of its own)."""
    facts = atom_facts(atom)
    if not facts or any(f not in origins for f in facts):
        return None
    if len(facts) >= 2:
        return Difficulty.L3, f"it composes {len(facts)} distinct facts ({', '.join(facts)})"
    fact = facts[0]
    if atom.direction in VERIFICATION_DIRECTIONS:
        return Difficulty.L2, f"{atom.direction} checks independent verification or conflict handling"
    direction = direction_inventory().by_id().get(atom.direction)
    judged_content = atom.evaluator is AtomEvaluator.J and direction is not None and direction.dimension is Dimension.C
    if judged_content and states.get(fact) is Verification.disputed:
        return Difficulty.L2, f"it judges content on disputed fact {fact}, so the report must handle the conflict"
    if origins[fact] is Origin.web:
        return Difficulty.L1, f"it rests on one external fact ({fact})"
    return Difficulty.L0, f"it rests on one source-video fact ({fact})"
