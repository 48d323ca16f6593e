"""A seeded coin-flip reward (acc with probability 0.15) to exercise dynamic sampling in tests."""

import hashlib


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw):
    h = int(hashlib.sha256(f"{solution_str}|{ground_truth}|{kw}".encode()).hexdigest()[:8], 16)
    acc = (h % 100) < 15
    return {"score": float(acc), "acc": acc, "pred": None, "format": 0.0}
