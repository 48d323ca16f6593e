"""Data checks: the files exist and read, the columns veRL reads are there and well formed, veRL's
``RLHFDataset`` opens them, every ``data_source`` has a verifier, and duplicate and train/validation
overlap counts.

Everything that touches every row is one vectorised Arrow pass (``pyarrow.compute``): null and
empty values, message roles, prompt keys for duplicates (exact: the same messages, role and
text). What needs Python per row runs on a sample: ``RLHFDataset.__getitem__`` + ``collate_fn``
on ``settings.verl_rows`` rows (the full file still goes through ``RLHFDataset``'s loader, without
its overlong filter: lengths are :mod:`recipes.preflight.lengths`'). Not covered: near-duplicates
(normalised text, n-grams: ``data_pipelines.clean``), multi-modal columns.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from omegaconf import OmegaConf

from recipes.preflight.context import SPLITS, Context, sel

ROLES = ("system", "user", "assistant", "tool")
MAKE_DATA = "make data DATA=<name> (data_pipelines), or point {key} at your parquet"


def _rows(mask: pa.Array, k: int = 3) -> tuple[int, list[int]]:
    """(how many rows ``mask`` marks, the first ``k`` of them)."""
    mask = pc.fill_null(mask, True)
    idx = pc.indices_nonzero(mask)
    return len(idx), idx.slice(0, k).to_pylist()


def _where(path: str, rows: list[int]) -> str:
    return f"{path} rows {', '.join(map(str, rows))}{'...' if len(rows) >= 3 else ''}"


def check_files(ctx: Context) -> dict[str, float]:
    """Every data file exists and reads as parquet (each read once, kept for the other checks)."""
    rows = 0
    for key, path in ctx.files():
        t = ctx.table(path)
        if t is None:
            ctx.report.add("data", "fail", f"{key}={path}", ctx.missing[path], MAKE_DATA.format(key=key))
        elif t.num_rows == 0:
            ctx.report.add("data", "fail", f"{key}={path}", "has no rows", MAKE_DATA.format(key=key))
        else:
            rows += t.num_rows
    if not ctx.files():
        ctx.report.add("data", "fail", "data.train_files", "no data files configured", "set data.train_files")
    return {"rows": rows}


def _check_prompt_column(ctx: Context, path: str, t: pa.Table, key: str) -> None:
    col = t.column(key).combine_chunks()
    typ = col.type
    if not (pa.types.is_list(typ) or pa.types.is_large_list(typ)) or not pa.types.is_struct(typ.value_type):
        ctx.report.add(
            "data",
            "fail",
            f"{path} column {key!r}",
            f"has type {typ}; veRL's agent loop applies the chat template to a list of {{role, content}} messages",
            "store prompts as [{'role': 'user', 'content': text}] (data_pipelines.io.write_rows does)",
        )
        return
    names = {typ.value_type.field(i).name for i in range(typ.value_type.num_fields)}
    if not {"role", "content"} <= names:
        ctx.report.add(
            "data",
            "fail",
            f"{path} column {key!r}",
            f"messages have fields {sorted(names)}, not role/content",
            "rename the message fields to role and content",
        )
        return
    n, ex = _rows(pc.or_(pc.is_null(col), pc.equal(pc.list_value_length(col), 0)))
    if n:
        ctx.report.add(
            "data", "fail", _where(path, ex), f"{n} rows have no prompt messages", "drop or fix them"
        )
    flat = pc.list_flatten(col)
    parent = pc.list_parent_indices(col)
    bad_role = pc.invert(pc.is_in(flat.field("role"), value_set=pa.array(ROLES)))
    content = flat.field("content")
    empty = pc.or_(pc.is_null(content), pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(content)), 0))
    for mask, what in ((bad_role, f"a message role outside {ROLES}"), (empty, "an empty message")):
        rows = np.unique(pc.filter(parent, pc.fill_null(mask, True)).to_numpy())
        if len(rows):
            ctx.report.add(
                "data",
                "fail",
                _where(path, rows[:3].tolist()),
                f"{len(rows)} rows have {what}",
                "fix the prompts",
            )


def check_schema(ctx: Context) -> dict[str, float]:
    """The columns veRL reads (``data.prompt_key``, ``data.reward_fn_key``, ``reward_model.ground_truth``)."""
    pkey = str(sel(ctx.cfg, "data.prompt_key", "prompt"))
    skey = str(sel(ctx.cfg, "data.reward_fn_key", "data_source"))
    for _, path in ctx.files():
        t = ctx.table(path)
        if t is None:
            continue
        cols = t.column_names
        for col, why in (
            (pkey, "data.prompt_key"),
            (skey, "data.reward_fn_key"),
            ("reward_model", "the reward"),
        ):
            if col not in cols:
                ctx.report.add(
                    "data",
                    "fail",
                    f"{path} column {col!r}",
                    f"missing (read via {why}); columns: {cols}",
                    f"rename the column to {col!r} or set {why}"
                    if why.startswith("data.")
                    else "add reward_model: {style: rule, ground_truth: <answer>}",
                )
        if pkey in cols:
            _check_prompt_column(ctx, path, t, pkey)
        if skey in cols:
            src = t.column(skey).combine_chunks()
            if not pa.types.is_string(src.type) and not pa.types.is_large_string(src.type):
                src = pc.cast(src, pa.string())
            n, ex = _rows(pc.or_(pc.is_null(src), pc.equal(pc.utf8_length(src), 0)))
            if n:
                ctx.report.add(
                    "data", "fail", _where(path, ex), f"{n} rows have no {skey}", f"set {skey} on every row"
                )
        if "reward_model" in cols:
            _check_gold_column(ctx, path, t)
    return {}


def _check_gold_column(ctx: Context, path: str, t: pa.Table) -> None:
    rm = t.column("reward_model").combine_chunks()
    if not pa.types.is_struct(rm.type) or rm.type.get_field_index("ground_truth") < 0:
        ctx.report.add(
            "data",
            "fail",
            f"{path} column 'reward_model'",
            f"has type {rm.type}, without ground_truth",
            "reward_model must be a struct {style, ground_truth}",
        )
        return
    gt = pc.struct_field(rm, "ground_truth")
    empty = pc.is_null(gt)
    if pa.types.is_string(gt.type) or pa.types.is_large_string(gt.type):
        empty = pc.or_(empty, pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(gt)), 0))
    n, ex = _rows(empty)
    if n:
        ctx.report.add(
            "data",
            "fail",
            _where(path, ex),
            f"{n} rows have no reward_model.ground_truth",
            "every row needs its gold answer (as text, e.g. '1600')",
        )


def check_verl_dataset(ctx: Context) -> dict[str, float]:
    """Open every file with veRL's own ``RLHFDataset`` (its overlong filter off) and collate sampled rows."""
    import datasets  # HF datasets, which RLHFDataset reads parquet with (seconds to import)
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # veRL: seconds to import

    datasets.disable_progress_bars()
    data_cfg = OmegaConf.to_container(ctx.cfg.data, resolve=True)
    data_cfg.update({"filter_overlong_prompts": False, "shuffle": False})
    n_items = 0
    for key, path in ctx.files():
        t = ctx.table(path)
        if t is None:
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                ds = RLHFDataset(
                    data_files=[path], tokenizer=ctx.tokenizer(), config=OmegaConf.create(data_cfg)
                )
            if len(ds) != t.num_rows:
                raise ValueError(f"RLHFDataset holds {len(ds)} rows, the file {t.num_rows}")
            rows = ctx.sample_rows(path, int(ctx.settings.verl_rows), per_source=1)
            batch = collate_fn([ds[i] for i in rows])
            n_items += len(rows)
            for need in (
                "raw_prompt",
                str(sel(ctx.cfg, "data.reward_fn_key", "data_source")),
                "reward_model",
            ):
                if need not in batch:
                    raise KeyError(f"collate_fn output has no {need!r}")
        except Exception as e:  # noqa: BLE001 - whatever veRL raises is the finding
            ctx.report.add(
                "data",
                "fail",
                f"{key}={path}",
                f"veRL's RLHFDataset cannot load it: {type(e).__name__}: {e}",
                "fix the file so veRL's loader reads it (the schema findings above say where)",
            )
    return {"sampled": n_items}


def check_sources(ctx: Context) -> dict[str, float]:
    """Every ``data_source`` value has a verifier (for this project's reward, by its registry)."""
    skey = str(sel(ctx.cfg, "data.reward_fn_key", "data_source"))
    fn, desc = ctx.reward_fn()
    if fn is None:
        ctx.report.add("reward", "fail", "reward.custom_reward_function", desc, "fix path/name")
        return {}
    project = ctx.is_project_reward()
    counts: dict[str, int] = {}
    for _, path in ctx.files():
        t = ctx.table(path)
        if t is None or skey not in t.column_names:
            continue
        vc = pc.value_counts(pc.cast(t.column(skey).combine_chunks(), pa.string()))
        for v, c in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist(), strict=True):
            if v is None:
                continue
            counts[v] = counts.get(v, 0) + c
            if project:
                _check_registered(ctx, path, t, skey, v, c)
    ctx.report.facts["data_sources"] = counts
    how = "registered in rewards.registry" if project else f"checked by calling {desc} on sampled rows"
    ctx.report.add(
        "data", "info", "data_source", f"{len(counts)} sources {dict(list(counts.items())[:8])}; {how}"
    )
    return {}


def _check_registered(ctx: Context, path: str, t: pa.Table, skey: str, value: str, count: int) -> None:
    from rewards.registry import resolve  # the verifier registry (imports the verifiers)

    try:
        resolve(value)
    except KeyError as e:
        _, ex = _rows(pc.equal(t.column(skey).combine_chunks(), value))
        ctx.report.add(
            "data",
            "fail",
            _where(path, ex),
            f"data_source {value!r} ({count} rows) has no verifier: {e.args[0]}"[:400],
            "use a registered data_source name or register a verifier (rewards.registry.register)",
        )


def prompt_keys(t: pa.Table, key: str) -> pa.Array:
    """One string per row: its messages as ``role\\x1fcontent`` joined by ``\\x1e`` (exact identity)."""
    col = t.column(key).combine_chunks()
    if not pa.types.is_list(col.type):
        return pc.cast(col, pa.string())
    flat = pc.list_flatten(col)
    msg = pc.binary_join_element_wise(
        pc.cast(flat.field("role"), pa.string()), pc.cast(flat.field("content"), pa.string()), "\x1f"
    )
    offsets = pc.subtract(col.offsets, col.offsets[0])
    return pc.binary_join(pa.ListArray.from_arrays(offsets, msg), "\x1e")


def _gold_strings(t: pa.Table) -> pa.Array:
    gt = pc.struct_field(t.column("reward_model").combine_chunks(), "ground_truth")
    try:
        return pc.cast(gt, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([str(x) for x in gt.to_pylist()])


def _split_keys(ctx: Context, split: str) -> tuple[pa.Array | None, pa.Array | None, list[str]]:
    pkey = str(sel(ctx.cfg, "data.prompt_key", "prompt"))
    keys, golds, paths = [], [], []
    for key, path in ctx.files():
        t = ctx.table(path)
        if (
            SPLITS[key] != split
            or t is None
            or pkey not in t.column_names
            or "reward_model" not in t.column_names
        ):
            continue
        try:
            keys.append(prompt_keys(t, pkey))
            golds.append(_gold_strings(t))
            paths.append(path)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, KeyError):
            continue  # malformed columns: the schema findings already name them
    if not keys:
        return None, None, paths
    return pa.concat_arrays(keys), pa.concat_arrays(golds), paths


def check_duplicates(ctx: Context) -> dict[str, float]:
    """Exact duplicate prompts per split (and those whose golds disagree); validation prompts seen in training."""
    seen: dict[str, pa.Array] = {}
    for split in ("train", "val"):
        keys, golds, paths = _split_keys(ctx, split)
        if keys is None:
            continue
        seen[split] = keys
        uniq = pc.unique(keys)
        dups = len(keys) - len(uniq)
        where = f"data.{split}_files ({', '.join(paths)})"
        if dups:
            vc = pc.value_counts(keys)
            top = pc.filter(vc, pc.greater(vc.field("counts"), 1)).slice(0, 2)
            ex = [
                f"rows {pc.indices_nonzero(pc.equal(keys, v)).slice(0, 4).to_pylist()}: {v.split(chr(31))[-1][:80]!r}"
                for v in top.field("values").to_pylist()
            ]
            ctx.report.add(
                "data",
                "warn",
                where,
                f"{dups} of {len(keys)} rows repeat an earlier prompt exactly ({len(keys) - dups} distinct)",
                "deduplicate (make data ... dedup=true; data_pipelines.clean.dedup), or keep them on purpose",
                ex,
            )
        conflicts = len(pc.unique(pc.binary_join_element_wise(keys, golds, "\x1d"))) - len(uniq)
        if conflicts:
            ctx.report.add(
                "data",
                "warn",
                where,
                f"{conflicts} repeated prompts carry different golds (contradictory labels)",
                "keep one gold per prompt (data_pipelines.clean.dedup counts them as conflicting_gold)",
            )
    if "train" in seen and "val" in seen:
        shared = pc.is_in(seen["val"], value_set=pc.unique(seen["train"]))
        n, ex = _rows(shared)
        if n:
            ctx.report.add(
                "data",
                "warn",
                "data.val_files",
                f"{n} of {len(seen['val'])} validation prompts also occur in training "
                f"(rows {ex}...): held-out accuracy would be inflated",
                "decontaminate the training set (data_pipelines.clean.decontaminate)",
            )
    return {"rows": float(sum(len(v) for v in seen.values()))}


def row_dict(t: pa.Table, i: int) -> dict[str, Any]:
    """Row ``i`` of a table as a dict (one row converted, not the table)."""
    return {k: v[0] for k, v in t.slice(i, 1).to_pydict().items()}
