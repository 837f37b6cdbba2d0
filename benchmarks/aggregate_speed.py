"""How fast does scoring re-aggregate a full benchmark run?

Builds a synthetic run the size of the paper's (18 systems x 50 tasks x 128 atoms, the released
content/citation/presentation mix, fact-linked citation atoms so that the N/A guard has work, a
few failed reports), then times, from saved decisions:

1. re-aggregation: every report scored (guard included) into `ReportScore` records;
2. the leaderboard with 20,000-replicate task-bootstrap intervals and all 153 paired comparisons;
3. the total of 1 and 2;

and, for information, reading the decisions back from JSON text and the sensitivity table.
Prints wall-clock seconds; asserts nothing.

    .venv/bin/python benchmarks/aggregate_speed.py [--seed N] [--repeat N]
"""

import argparse
import json
import os
import platform
import random
import time

from omnidr.benchmark import Atom, RubricTree, direction_inventory
from omnidr.scoring import (
    Decisions,
    SystemDecisions,
    SystemKey,
    build_leaderboard,
    score_systems,
    sensitivity_analysis,
)

SYSTEMS, TASKS, ATOMS, REPLICATES = 18, 50, 128, 20_000
# 4,060 / 1,234 / 1,120 content / citation / presentation atoms over 50 tasks (paper App. E).
MIX = {"C": 81, "R": 25, "P": 22}


def synthetic_tree(task_id: str, rng: random.Random) -> RubricTree:
    dirs = direction_inventory().directions
    by_dim = {k: [d for d in dirs if d.dimension.value == k] for k in MIX}
    atoms: list[Atom] = []
    n_facts = 40
    for dim, count in MIX.items():
        for i in range(count):
            if i < len(by_dim[dim]):  # every direction gets an atom
                d = by_dim[dim][i]
            elif dim == "C" and rng.random() < 0.7:  # most content atoms are coverage-type
                d = rng.choice([x for x in by_dim[dim] if x.high_volume])
            else:
                d = rng.choice(by_dim[dim])
            fact = f"F{rng.randrange(n_facts):03d}" if dim in "CR" else None
            m = d.evaluator.value == "M"
            atoms.append(Atom(
                id=f"{dim}{i:03d}", direction=d.id, criterion=f"criterion {dim}{i}", evaluator="M" if m else "J",
                probe={"name": "dom_exists", "params": {}} if m else None, fact_id=fact,
                difficulty=rng.choice(["L0", "L1", "L2", "L3"]), evidence_note="synthetic",
            ))
    assert len(atoms) == ATOMS
    return RubricTree(task_id=task_id, atoms=atoms)


def synthetic_decisions(tree: RubricTree, skill: float, rng: random.Random) -> Decisions:
    if rng.random() < 0.07:
        return Decisions(task_id=tree.task_id, failure="report missing")
    hv = {d.id for d in direction_inventory().directions if d.high_volume}
    out: dict[str, object] = {}
    for a in tree.atoms:
        p = 0.1 * skill if a.direction in hv else (0.9 if a.direction.startswith("P") else 0.6) * skill
        u = rng.random()
        if u < 0.01:
            out[a.id] = "skipped"
        elif u < 0.02:
            out[a.id] = "na"
        elif a.direction in ("C-VF", "C-QR", "P-RI", "P-TN"):
            votes = ["pass" if rng.random() < p + 0.3 else "fail" for _ in range(3)]
            out[a.id] = {"votes": votes}
        else:
            out[a.id] = "pass" if rng.random() < p else "fail"
    return Decisions.model_validate({"task_id": tree.task_id, "decisions": out})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="Runs; the fastest is reported.")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    trees = {f"task-{t:02d}": synthetic_tree(f"task-{t:02d}", rng) for t in range(TASKS)}
    systems = [
        SystemDecisions(system=SystemKey(model=f"model-{s:02d}", harness="harness"),
                        decisions=[synthetic_decisions(tree, 0.6 + 0.02 * s, rng) for tree in trees.values()])
        for s in range(SYSTEMS)
    ]
    texts = [[d.model_dump_json() for d in s.decisions] for s in systems]

    best: dict[str, float] = {}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        parsed = [[Decisions.model_validate_json(x) for x in row] for row in texts]
        t1 = time.perf_counter()
        scored = score_systems(systems, trees)
        t2 = time.perf_counter()
        board = build_leaderboard(scored, sorted(trees), replicates=REPLICATES, seed=0, with_comparisons=True)
        t3 = time.perf_counter()
        timings = {"parse": t1 - t0, "reaggregate": t2 - t1, "bootstrap": t3 - t2, "total": t3 - t1,
                   "total_from_json": t3 - t0}
        for name, sec in timings.items():
            best[name] = min(best.get(name, float("inf")), sec)
    assert len(parsed) == SYSTEMS and len(board.comparisons) == SYSTEMS * (SYSTEMS - 1) // 2
    guard_reports = sum(1 for s in scored for r in s.reports if r.na_guard and r.na_guard.candidates)
    applied = sum(r.na_guard.applied for s in scored for r in s.reports if r.na_guard)
    t4 = time.perf_counter()
    table = sensitivity_analysis(systems, trees)
    t5 = time.perf_counter()

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s), Python {platform.python_version()}")
    print(f"run: {SYSTEMS} systems x {TASKS} tasks x {ATOMS} atoms = {SYSTEMS * TASKS * ATOMS:,} decisions; "
          f"{sum(r.failed for s in scored for r in s.reports)} failed reports; guard had candidates in "
          f"{guard_reports} reports and applied {applied} N/A")
    print(f"best of {args.repeat} runs, wall clock:")
    print(f"  re-aggregate {SYSTEMS * TASKS} reports from saved decisions      : {best['reaggregate']:.3f} s")
    print(f"  leaderboard + {len(board.comparisons)} paired bootstraps, {REPLICATES:,} replicates: {best['bootstrap']:.3f} s")
    print(f"  total (re-aggregate + all bootstraps)                 : {best['total']:.3f} s")
    print(f"  parse the {SYSTEMS * TASKS} decision files from JSON text        : {best['parse']:.3f} s")
    print(f"  total from JSON text (parse + re-aggregate + bootstraps): {best['total_from_json']:.3f} s")
    print(f"  (extra, once) sensitivity table, {len(table.rows)} settings      : {t5 - t4:.3f} s")
    print(json.dumps({k: round(v, 4) for k, v in best.items()}))


if __name__ == "__main__":
    main()
