"""One page per recipe, ``docs/recipes/<recipe>.md``: the block ``recipe-<recipe>`` is the whole page.

Composed from three places, nothing typed by hand:

- ``conf/recipe/<recipe>.yaml``: its header comment (what the recipe is), its config-group choices,
  its laptop profile (``rlvr.laptop_scale``), the keys it cites (``rlvr.sources``) or deviates on
  (``rlvr.deviations``), and, composed, the value of every key;
- ``recipes/official/<recipe>.yaml``: the method's name (``method``), the page's title;
- ``results/seed_table/``: the laptop runs of this recipe (and its shuffled-reward control).

The column "reaches" names the code a key's value selects, looked up at generation time through
veRL 0.9.1's own registries (``core_algos.get_adv_estimator_fn``, ``get_policy_loss_fn``, the
reward-manager registry) or the function that reads it, so a renamed function breaks ``make docs``
instead of leaving a stale name. :func:`ensure_pages` writes the page of a new recipe (its markers
only; ``make docs`` fills them).
"""

from __future__ import annotations

import functools
import inspect
import re
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from verl.trainer.config.algorithm import FilterGroupsConfig
from verl.trainer.distillation.losses import get_distillation_loss_fn
from verl.trainer.ppo import core_algos, ray_trainer
from verl.trainer.ppo.v1 import trainer_base
from verl.workers.reward_manager import get_reward_manager_cls

import rewards
from analysis.render import Table
from core.results import REPO
from docgen.engine import Rendered, source_line
from docgen.recipes import _fmt, _one_line, composed
from docgen.results import read
from recipes import launch_verl, official
from recipes.compose import options
from recipes.local import algo

PAGE_DIR = "docs/recipes"
ACTOR = "actor_rollout_ref.actor"


def names() -> list[str]:
    """Every recipe (``conf/recipe/*.yaml``)."""
    return options("recipe")


def page_path(recipe: str, root: Path = REPO) -> Path:
    return root / PAGE_DIR / f"{recipe}.md"


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading.

    >>> slug("`dapo`: DAPO (Yu et al. 2025)")
    'dapo-dapo-yu-et-al-2025'
    """
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def ensure_pages(check: bool = False, root: Path = REPO, only: Iterable[str] | None = None) -> list[str]:
    """Write the page (its block's markers) of every recipe that has none (of those whose block is
    in ``only``, when given); the missing pages."""
    out = []
    for recipe in names():
        path = page_path(recipe, root)
        if path.is_file() or (only is not None and f"recipe-{recipe}" not in only):
            continue
        out.append(f"{path.relative_to(root)}: missing page")
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f"<!-- gen:recipe-{recipe} -->\n<!-- /gen:recipe-{recipe} -->\n", encoding="utf-8"
            )
    return out


# --- what the recipe file says -----------------------------------------------------------------


def _recipe_file(recipe: str) -> Path:
    return REPO / "conf" / "recipe" / f"{recipe}.yaml"


def header(recipe: str) -> str:
    """The recipe file's leading comment (without ``@package``), as one paragraph."""
    lines = []
    for line in _recipe_file(recipe).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            lines.append(line.lstrip("#").strip())
    return " ".join(" ".join(lines).split())


def choices(recipe: str) -> list[tuple[str, str]]:
    """The recipe's config-group choices (``- override /<group>: <option>``), in file order."""
    spec = yaml.safe_load(_recipe_file(recipe).read_text(encoding="utf-8")) or {}
    out = []
    for item in spec.get("defaults", []):
        if isinstance(item, dict):
            for k, v in item.items():
                out.append((str(k).removeprefix("override ").lstrip("/"), str(v)))
    return out


# --- the code each key reaches ------------------------------------------------------------------


def _name(obj: Any) -> str:
    return f"`{obj.__module__}.{obj.__qualname__}`"


def _sel(cfg: DictConfig, key: str) -> Any:
    got = OmegaConf.select(cfg, key)
    return OmegaConf.to_container(got, resolve=True) if OmegaConf.is_config(got) else got


def _filter_groups_code(cfg: DictConfig) -> str:
    """Where dynamic sampling is read: the local engine's function, and the veRL trainer that
    ``main_ppo`` runs for this config (``trainer.use_v1``: the V1 trainer's replay buffer, else
    ``ray_trainer``), found by reading that trainer's source for the key, not assumed."""
    if _sel(cfg, "trainer.use_v1"):
        reads = "filter_groups" in inspect.getsource(trainer_base)
        where = f"{_name(trainer_base.PPOTrainer._resolve_filter_groups_metric)} (the V1 replay buffer"
        if "max_num_gen_batches" in inspect.getsource(trainer_base.PPOTrainer._resolve_filter_groups_metric):
            where += "; it ignores `max_num_gen_batches`"
        if "gen_batch_size = 1" in inspect.getsource(trainer_base.PPOTrainer._init_dataloader):
            where += (
                f" and sets `data.gen_batch_size` to 1 ({_name(trainer_base.PPOTrainer._init_dataloader)})"
            )
        where += ")"
        mod = trainer_base.__name__
    else:
        reads, where, mod = (
            "filter_groups" in inspect.getsource(ray_trainer),
            f"`{ray_trainer.__name__}`",
            ray_trainer.__name__,
        )
    verl = (
        f"veRL: {where}"
        if reads
        else f"veRL 0.9.1: declared by {_name(FilterGroupsConfig)}, not read by `{mod}`"
    )
    return f"the local engine: {_name(algo.keep_groups)}; {verl}"


def code_rows(cfg: DictConfig) -> list[tuple[str, str]]:
    """``(key, code it reaches)`` for the algorithmic keys of a composed recipe, looked up in veRL."""

    adv = core_algos.get_adv_estimator_fn(_sel(cfg, "algorithm.adv_estimator"))
    loss = core_algos.get_policy_loss_fn(_sel(cfg, f"{ACTOR}.policy_loss.loss_mode"))
    manager = get_reward_manager_cls(_sel(cfg, "reward.reward_manager.name"))
    rows: list[tuple[str, str]] = [("algorithm.adv_estimator", _name(adv))]
    if adv.__name__ == "compute_gae_advantage_return":
        rows += [
            ("algorithm.gamma", f"argument of {_name(adv)}"),
            ("algorithm.lam", f"argument of {_name(adv)}"),
        ]
    else:
        rows.append(("algorithm.norm_adv_by_std_in_grpo", f"argument of {_name(adv)}"))
    rows.append((f"{ACTOR}.policy_loss.loss_mode", _name(loss)))
    rows += [
        (f"{ACTOR}.{k}", f"argument of {_name(loss)}")
        for k in ("clip_ratio_low", "clip_ratio_high", "clip_ratio_c")
    ]
    rows.append((f"{ACTOR}.loss_agg_mode", _name(core_algos.agg_loss)))
    rows.append(
        (f"{ACTOR}.use_kl_loss", _name(core_algos.kl_penalty) if _sel(cfg, f"{ACTOR}.use_kl_loss") else "off")
    )
    if _sel(cfg, f"{ACTOR}.use_kl_loss"):
        rows += [
            (f"{ACTOR}.kl_loss_type", _name(core_algos.kl_penalty)),
            (f"{ACTOR}.kl_loss_coef", "its weight"),
        ]
    in_reward = _sel(cfg, "algorithm.use_kl_in_reward")
    rows.append(("algorithm.use_kl_in_reward", _name(ray_trainer.apply_kl_penalty) if in_reward else "off"))
    if _sel(cfg, "algorithm.filter_groups.enable"):
        rows.append(("algorithm.filter_groups.enable", _filter_groups_code(cfg)))
        rows.append(("algorithm.filter_groups.metric", f"{_name(algo.group_metric)}"))
    else:
        rows.append(("algorithm.filter_groups.enable", "off"))
    rows.append(("reward.reward_manager.name", _name(manager)))
    if _sel(cfg, "reward.reward_kwargs.overlong_buffer_cfg.enable"):
        rows.append(("reward.reward_kwargs.overlong_buffer_cfg.len", f"{_name(manager)} (overlong penalty)"))
    rows.append(("reward.custom_reward_function.name", _name(rewards.compute_score)))
    rows.append(
        (
            "reward.custom_reward_function.reward_kwargs",
            f"keyword arguments of {_name(rewards.compute_score)}",
        )
    )
    if _sel(cfg, "rlvr.ref_reset_steps"):
        rows.append(
            ("rlvr.ref_reset_steps", f"{_name(launch_verl.launch_commands)} (segments of this many steps)")
        )
    if _sel(cfg, "distillation.enabled"):
        fn = get_distillation_loss_fn(_sel(cfg, "distillation.distillation_loss.loss_mode"))
        rows.append(("distillation.distillation_loss.loss_mode", _name(fn)))
        rows.append(("distillation.teacher_models.teacher_model.model_path", "the teacher"))
    rows.append(("actor_rollout_ref.model.path", "the policy's initial weights"))
    return rows


# --- the page -----------------------------------------------------------------------------------


def _value(cfg: DictConfig, key: str) -> str:
    got = _sel(cfg, key)
    if isinstance(got, dict):
        return ", ".join(f"`{k}={_fmt(v)}`" for k, v in got.items()) or "`{}`"
    text = "null" if got is None else _fmt(got)
    return f"`{text}`" if text else "`''`"


def _data_name(cfg: DictConfig) -> str | None:
    m = re.match(r"data/([\w.-]+)/", str(_sel(cfg, "data.train_files") or ""))
    return m.group(1) if m else None


def _quickstart(recipe: str, cfg: DictConfig) -> str:
    scale = str(cfg.rlvr.laptop_scale)
    start = "RL from the laptop base model" if scale == "laptop_base" else "RL after a short SFT cold start"
    if OmegaConf.select(cfg, "distillation.enabled", default=False):
        start += "; the first run also builds the laptop teacher, local.teacher"
    laptop = f"make run RECIPE={recipe}"
    cpu = f"make run RECIPE={recipe} ENGINE=verl"
    gpu = f'make run RECIPE={recipe} ENGINE=verl ARGS="scale=gpu_node"'
    width = len(gpu) + 2
    data = _data_name(cfg)
    lines = [
        "## Quickstart",
        "",
        "```bash",
        f"{laptop:<{width}}# laptop CPU: engine=local, scale={scale} ({start})",
        f"{cpu:<{width}}# the same miniature on veRL's own main_ppo, on the CPU",
        f"{gpu:<{width}}# one node of 8 GPUs: veRL's own main_ppo",
        "```",
        "",
        "Without a GPU, `ENGINE=verl` runs veRL's own trainer on the CPU (the `verl_cpu` backend) at the "
        "laptop profile ([engines](../engines.md#verls-own-trainer-on-a-cpu)). On a GPU machine, write the recipe's data first"
        + (f" (`make data DATA={data}`)" if data else "")
        + '; `ARGS="scale=multi_node"` runs on a Ray cluster, and `dry_run=true` writes the composed '
        "veRL config and `launch.sh` without launching ([engines](../engines.md), "
        "[GPU profiles](../gpu.md)). **GPU runs were not executed on this project's machine** (CPU only): "
        "the GPU form is checked by composition, validation, dry runs and the same trainer run on the CPU.",
    ]
    return "\n".join(lines)


def _keys(recipe: str, cfg: DictConfig) -> str:
    sources = dict(cfg.rlvr.get("sources") or {})
    dev = dict(cfg.rlvr.get("deviations") or {})
    picks = ", ".join(f"`{g}={o}`" for g, o in choices(recipe))
    rows = []
    shown = set()
    for key, code in code_rows(cfg):
        shown.add(key)
        mark = " †" if key in dev else ""
        rows.append([f"`{key}`", _value(cfg, key) + mark, code])
    own = [k for k in [*sources, *dev] if k not in shown]
    other = [[f"`{k}`", _value(cfg, k) + (" †" if k in dev else "")] for k in dict.fromkeys(own)]
    method = official.load(recipe).method
    anchor = slug(f"`{recipe}`: {method}")
    text = [
        "## The keys that matter",
        "",
        f"Config-group choices (one per ablation axis): {picks}. Values at the published scale "
        "(a scale profile changes only sizes); † marks a deviation from the method's official value.",
        "",
        Table(["key", "value", "reaches"], rows).markdown(),
    ]
    if other:
        text += ["", "The recipe's other keys:", "", Table(["key", "value"], other).markdown()]
    if dev:
        text += ["", "Deviations, with the recipe file's reasons:", ""]
        text += [f"- `{k}`: {_one_line(v)}" for k, v in dev.items()]
    text += [
        "",
        f"Each key's official value and the line it is transcribed from: "
        f"[provenance](../provenance.md#{anchor}) (`recipes/official/{recipe}.yaml`).",
    ]
    return "\n".join(text)


def _reproduction(recipe: str) -> tuple[str, list[str]]:
    data = read("seed_table")
    if data is None:
        return "*Not run yet: `make results NAME=seed_table` writes `results/seed_table/`.*", []
    runs = [r for r in data["runs"].values() if r["label"] in (recipe, f"{recipe}-shuffled")]
    if not runs:
        return (
            f"`results/seed_table/` holds no run of `{recipe}` (the seed table runs the recipes that "
            "start from a base model); the related results are linked below.",
            [],
        )
    rows = []
    for r in sorted(runs, key=lambda r: (r["label"], int(r["seed"]))):
        a0, a1 = r["summary"]["start_acc"], r["summary"]["end_acc"]
        rows.append(
            [
                f"`{r['label']}`",
                str(r["seed"]),
                f"{a0:.3f}",
                f"{a1:.3f}",
                f"{a1 - a0:+.3f}",
                f"{r['wall_s'] / 60:.1f}",
                f"{r['cpu_s'] / 60:.1f}",
            ]
        )
    mine = [r for r in runs if r["label"] == recipe]
    gains = [r["summary"]["end_acc"] - r["summary"]["start_acc"] for r in mine]
    scale = data["design"].get("scales", {}).get(recipe, "?")
    text = (
        f"Held-out accuracy, start → end of one laptop run per seed (`scale={scale}`, CPU, this project's "
        f"2-core machine). Claim recorded before the runs: {data['design'].get('claim', '')}. "
        f"Median gain {statistics.median(gains):+.3f} over {len(mine)} seeds; "
        f"{sum(g >= 0.15 for g in gains)}/{len(mine)} seeds gain at least 0.15.\n\n"
    )
    if len(runs) > len(mine):
        text += f"`{recipe}-shuffled`: the same runs with rewards shuffled within each batch (a control).\n\n"
    text += Table(["run", "seed", "start", "end", "gain", "wall min", "CPU min"], rows).markdown()
    return text, [source_line("results/seed_table", data.get("provenance"))]


#: pages with more results on a recipe (paths relative to docs/recipes/)
RELATED: dict[str, list[str]] = {
    "r1_zero": ["[R1-Zero in miniature](../r1_zero.md)", "[ablations](../ablations.md)"],
    "r1_reasoning": ["[pipelines](../pipelines.md)"],
    "opd": ["[reward models and on-policy distillation](../reward_models.md)"],
    "dapo": ["[ablations](../ablations.md) (dynamic sampling)"],
    "drgrpo": ["[ablations](../ablations.md) (loss normalisation)"],
}


def recipe_page(recipe: str) -> Rendered:
    """The page of one recipe: what it is, how to run it, its keys and their code, its runs."""
    cfg = composed(recipe)
    method = official.load(recipe).method
    repro, sources = _reproduction(recipe)
    parts = [
        f"# `{recipe}`: {method}",
        "",
        "*Generated by `make docs` from `conf/recipe/"
        + recipe
        + ".yaml`, `recipes/official/"
        + recipe
        + ".yaml` and `results/`; edit those, not this page.*",
        "",
        f"> {header(recipe)}",
        "",
        _quickstart(recipe, cfg),
        "",
        _keys(recipe, cfg),
        "",
        "## Reproduction",
        "",
        repro,
    ]
    related = RELATED.get(recipe, [])
    parts += ["", "More: " + ", ".join([*related, "[all recipes](../../README.md#recipes)"]) + "."]
    return Rendered("\n".join(parts), sources=sources)


def sections() -> dict[str, Callable[[], Rendered]]:
    """``recipe-<recipe>`` -> its page, for ``docgen.blocks``."""
    return {f"recipe-{r}": functools.partial(recipe_page, r) for r in names()}
