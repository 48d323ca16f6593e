"""The step profile's split (benchmarks.profile_engine.split) on real torch.profiler events."""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from benchmarks.profile_engine import split


def test_split_puts_matrix_products_in_their_phase_and_the_rest_outside() -> None:
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("rlvr/step"):
            with record_function("rlvr/gen"):
                for _ in range(5):
                    a @ b  # dense arithmetic in the sampling phase
            for _ in range(200):
                a.add_(1e-6)  # small per-call ops in the update phase
            sum(range(200_000))  # Python outside any op
    parts = split(prof.events())
    gen, upd = parts["gen"], parts["update"]
    assert gen["dense"] > 0 and gen["dense"] > gen["other_ops"]
    assert upd["dense"] == 0 and upd["other_ops"] > 0 and upd["outside_ops"] > 0
    for p in (gen, upd):
        assert abs(p["dense"] + p["other_ops"] + p["outside_ops"] - p["total"]) < 1e-6
    assert parts["gen"]["total"] > 0 and parts["update"]["total"] > 0
