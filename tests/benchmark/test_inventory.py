"""The shared data the paper fixes: directions, taxonomy, hyperparameters, report schema."""

from collections import Counter

from omnidr.benchmark import Dimension, GateLogic, Hyperparameters, data_schema, direction_inventory, taxonomy


def test_inventory_has_23_directions_over_three_dimensions():
    dirs = direction_inventory().directions
    assert len(dirs) == 23
    assert len({d.id for d in dirs}) == 23
    per_dim = Counter(d.dimension for d in dirs)
    assert set(per_dim) == {Dimension.C, Dimension.R, Dimension.P}
    assert all(n >= 5 for n in per_dim.values())


def test_high_volume_directions_are_fact_coverage_causal_analysis_comparison():
    high = {d.name for d in direction_inventory().directions if d.high_volume}
    assert high == {"Fact coverage", "Causal analysis", "Comparison"}
    assert {d.dimension for d in direction_inventory().directions if d.high_volume} == {Dimension.C}


def test_gates_declare_all_or_any_and_core_directions_are_rates():
    for d in direction_inventory().directions:
        assert (d.logic is not GateLogic.rate) == d.gate, d.id
    assert any(d.gate for d in direction_inventory().directions)


def test_taxonomy_has_four_families_and_nineteen_subcategories():
    t = taxonomy()
    assert len(t.families) == 4
    assert len(t.subcategories) == 19
    assert {s.family for s in t.subcategories} == {f.id for f in t.families}


def test_released_hyperparameters():
    h = Hyperparameters()
    assert (h.dimension_weights.C, h.dimension_weights.R, h.dimension_weights.P) == (0.50, 0.30, 0.20)
    assert (h.tau, h.kappa, h.window_s) == (0.18, 15, 300.0)
    b = h.budgets
    assert (b.web_sources, b.related_videos, b.documents, b.records_per_anchor) == (25, 5, 3, 3)
    assert (h.calibration_gap, h.max_repair_rounds) == (0.20, 3)


def test_report_data_schema_names_the_two_panes():
    props = data_schema()["properties"]
    for key in ("video", "timeline", "findings", "sources", "anchors", "overview"):
        assert key in props
