"""Small hand-built Omni-ART trees for the scoring tests.

`tree(task_id, spec)` builds a `RubricTree` from compact atom specs; `decide(...)` builds
decisions. Atom specs are tuples (id, direction, fact_id=None, polarity="yes", difficulty="L0").
"""

from omnidr.benchmark import Atom, RubricTree, direction_inventory

_DIRECTIONS = direction_inventory().by_id()


def atom(atom_id: str, direction: str, fact_id: str | None = None, polarity: str = "yes", difficulty: str = "L0") -> Atom:
    spec = _DIRECTIONS.get(direction)
    is_m = spec is not None and spec.evaluator.value == "M"
    return Atom(
        id=atom_id,
        direction=direction,
        criterion=f"Criterion {atom_id}",
        evaluator="M" if is_m else "J",
        probe={"name": "dom_exists", "params": {}} if is_m else None,
        polarity=polarity,
        fact_id=fact_id,
        difficulty=difficulty,
        evidence_note="hand-built test atom",
    )


def tree(task_id: str, atoms: list) -> RubricTree:
    return RubricTree(task_id=task_id, atoms=[a if isinstance(a, Atom) else atom(*a) for a in atoms])


def many(prefix: str, direction: str, n: int, **kw) -> list[Atom]:
    """`n` atoms named prefix00, prefix01, ... in one direction."""
    return [atom(f"{prefix}{i:02d}", direction, **kw) for i in range(n)]


def passes(ids: list[str], n_pass: int) -> dict[str, str]:
    """The first `n_pass` ids pass, the rest fail."""
    return {a: ("pass" if i < n_pass else "fail") for i, a in enumerate(ids)}
