"""The config schema checks a sweep spec's list of metrics item by item."""

from __future__ import annotations


def test_every_sweep_spec_validates_including_its_list_of_metrics() -> None:
    """A sweep's ``secondary`` is a list of Metric mappings: each item is checked (an unknown key is
    named with its index), and a valid list is not mistaken for a mapping."""
    from recipes.compose import compose
    from recipes.schema import project_errors

    cfg = compose(["sweep=kl_coef", "scale=laptop_base"])
    assert project_errors(cfg) == []
    bad = compose(["sweep=kl_coef", "scale=laptop_base", "rlvr.sweep.secondary=[{label: x, kee: y}]"])
    assert "[rlvr.sweep.secondary[0].kee] unknown key; known: how, key, label" in project_errors(bad)
