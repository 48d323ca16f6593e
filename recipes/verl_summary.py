"""After a run of veRL's own trainer: the held-out metrics the local engine logs, and ``summary.json``.

veRL's trainer logs its validation as ``val-core/<source>/acc/mean@1`` and dumps every held-out
response (``validation/<step>.jsonl``, ``_write_generations``), but not the local engine's
``rlvr/val_acc`` and ``rlvr/val_response_length``, and writes no ``summary.json``; the run records,
experiments and docs read those. :func:`write_summary` derives them from veRL's own outputs with the
local engine's definitions (``recipes/local/trainer.py``, ``Engine.evaluate``):

- ``rlvr/val_acc``: the mean over held-out responses of the verifier's ``acc`` (a boolean as 0/1; a
  non-number as 0; the reward where no ``acc`` was returned);
- ``rlvr/val_response_length``: the mean response length in tokens, end-of-sequence token included
  (the local engine's ``response_mask`` sum). The dumps hold the decoded text
  (``skip_special_tokens=True``), so the length is the text re-tokenized with the run's tokenizer,
  plus the end-of-sequence token unless the response filled ``data.max_response_length``
  (:func:`response_tokens`). It is the sampled count wherever the sampled tokens are the
  tokenizer's own encoding of their text; a response that sampled a special token mid-text (dropped
  by the decoding) or spelled a multi-character token out character by character counts fewer
  (``tests/recipes/test_verl_summary.py`` measures how often on the base model's samples);

and appends them to ``metrics.jsonl`` as lines of veRL's file format (``{"step", "data"}``) at each
validation step (lines it appended before are replaced; ``recipes.supervise`` rebuilds the file from
``metrics.d/`` at every launch, and this runs after it). ``summary.json`` holds the local engine's
keys (start/end held-out accuracy, steps, held-out samples, wall minutes, the model and its key) plus
``engine`` and ``data_sha256``: the held-out split the run's ``data.val_files`` took its first rows
from (``recipes.launch_cpu`` writes them to ``<run_dir>/data/``), so a record names the same split
hash as a local run's. Not covered: CPU time (veRL's work is spread over Ray processes no single
clock holds: :mod:`benchmarks.bench_cpu_engines` measures it), several data sources per run.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

ACC, LEN = "rlvr/val_acc", "rlvr/val_response_length"
DERIVED = frozenset({ACC, LEN})


def response_tokens(text: str, tokenizer: Any, max_len: int) -> int:
    """Tokens of a held-out response as the local engine counts them, from its decoded ``text``: the
    re-tokenized text plus the end-of-sequence token, or ``max_len`` for a response that filled it.

    >>> from core.model import build_tokenizer
    >>> tok = build_tokenizer("char")
    >>> response_tokens("<answer>12</answer>", tok, 96), response_tokens("1+1" * 40, tok, 96)
    (5, 96)
    """
    return min(len(tokenizer.encode(text, add_special_tokens=False)) + 1, int(max_len))


def _acc(row: dict[str, Any]) -> float:
    """One response's ``acc`` as the local engine averages it (``Engine.evaluate``)."""
    x = row.get("acc", row.get("reward", row.get("score")))
    return float(x) if isinstance(x, (bool, int, float)) else 0.0


def val_metrics(run_dir: Path, tokenizer: Any, max_len: int) -> dict[int, dict[str, float]]:
    """Per validation step: :data:`ACC`, :data:`LEN` and the number of held-out responses."""
    out: dict[int, dict[str, float]] = {}
    for f in sorted((Path(run_dir) / "validation").glob("*.jsonl"), key=lambda p: int(p.stem)):
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        if not rows:
            continue
        lengths = [response_tokens(str(r.get("output", "")), tokenizer, max_len) for r in rows]
        out[int(f.stem)] = {
            ACC: sum(_acc(r) for r in rows) / len(rows),
            LEN: sum(lengths) / len(lengths),
            "n": float(len(rows)),
        }
    return out


def append_metrics(run_dir: Path, by_step: dict[int, dict[str, float]]) -> None:
    """Replace the lines this module appended to ``metrics.jsonl`` with :data:`DERIVED` at each step."""
    path = Path(run_dir) / "metrics.jsonl"
    kept = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            mine = set(json.loads(line).get("data", {})) <= DERIVED
        except (ValueError, AttributeError):
            mine = False
        if line.strip() and not mine:
            kept.append(line)
    new = [json.dumps({"step": s, "data": {k: m[k] for k in (ACC, LEN)}}) for s, m in sorted(by_step.items())]
    path.write_text("".join(x + "\n" for x in kept + new))


def trained_steps(run_dir: Path) -> int:
    """The last step veRL logged a training step for (``timing_s/step``) in ``metrics.jsonl``."""
    steps = [0]
    path = Path(run_dir) / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.is_file() else []:
        row = json.loads(line)
        if "timing_s/step" in row.get("data", {}):
            steps.append(int(row["step"]))
    return max(steps)


def held_out_source(run_dir: Path, overrides: list[str], used: str) -> dict[str, str]:
    """``{test file: sha256}`` of the split the run's held-out file (``used``) is the first rows of: the
    ``data.val_files`` the run's overrides compose to; {} when ``used`` is that file or not its head."""
    import pyarrow.parquet as pq  # the parquet reader: only when a summary is written

    from core.data import sha256_file  # as above
    from recipes.compose import compose  # Hydra: only when a summary is written

    source = Path(str(compose(overrides).data.val_files)).expanduser()
    if source == Path(used) or not source.is_file() or not Path(used).is_file():
        return {}
    mine = pq.read_table(used)
    if not pq.read_table(source).slice(0, mine.num_rows).equals(mine):
        return {}
    return {str(source): sha256_file(source)}


def write_summary(run_dir: Path) -> dict[str, Any]:
    """Derive the held-out metrics of a finished veRL run in ``run_dir``, append them to its
    ``metrics.jsonl`` and write ``summary.json``; returns the summary. Raises ``ValueError`` naming
    the file when the run has no validation dumps (``trainer.validation_data_dir``)."""
    from core.model import load_tokenizer, model_key  # transformers: only when a summary is written

    run_dir = Path(run_dir)
    cfg = OmegaConf.load(run_dir / "config.yaml")
    manifest = json.loads((run_dir / "run.json").read_text())
    path = str(cfg.actor_rollout_ref.model.path)
    by_step = val_metrics(run_dir, load_tokenizer(path), int(cfg.data.max_response_length))
    if not by_step:
        raise ValueError(
            f"[trainer.validation_data_dir] {run_dir / 'validation'} holds no validation dump, so the held-out "
            "metrics cannot be derived; fix: keep trainer.validation_data_dir and trainer.test_freq > 0"
        )
    append_metrics(run_dir, by_step)
    first, last = by_step[min(by_step)], by_step[max(by_step)]
    started = datetime.strptime(manifest["started"], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    summary = {
        "recipe": str(cfg.rlvr.recipe),
        "seed": int(cfg.rlvr.seed),
        "engine": "verl",
        "start_acc": round(first[ACC], 4),
        "end_acc": round(last[ACC], 4),
        "start_step": min(by_step),
        "steps": trained_steps(run_dir),
        "eval_samples": int(last["n"]),
        "minutes": round((time.time() - started) / 60, 2),
        "run_dir": str(run_dir),
        "model": path,
        "model_key": model_key(path),
        "data_sha256": held_out_source(run_dir, list(manifest["overrides"]), str(cfg.data.val_files)),
        "val_response_length": "re-tokenized from validation dumps (recipes.verl_summary.response_tokens)",
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def summarize(run_dir: Path) -> dict[str, Any] | None:
    """:func:`write_summary` after a finished launch (``recipes.run``): the summary, or None with a note
    on stderr naming why none was written (the run itself finished either way)."""
    try:
        return write_summary(run_dir)
    except (ValueError, OSError, KeyError) as e:
        print(
            f"note: veRL's trainer finished, but no summary.json was written: {e}",
            file=sys.stderr,
            flush=True,
        )
        return None
