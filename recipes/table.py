"""The README's recipe table and docs/provenance.md, generated from ``conf/`` and ``recipes/official/``.

Both are docs sections (``analysis.docgen``): ``recipes-table`` (one row per recipe) and
``recipes-provenance`` (every recipe's official settings key by key, from ``recipes/official/``,
next to what the recipe does with each); ``make docs`` writes them between their markers and a
test fails if they are stale, so the documentation cannot drift from the configs. A cell marked †
holds a value the recipe deliberately takes from elsewhere than its method's official setting
(``rlvr.deviations``); the last column names every deviated key. ``python -m recipes.table``
prints the table (a Hydra app: ``conf/command/table.yaml``).
"""

from __future__ import annotations

from collections.abc import Iterable

from omegaconf import DictConfig, OmegaConf

from analysis.docgen import SECTIONS, Rendered
from analysis.render import Table
from core.cli import hydra_main
from recipes import official
from recipes.compose import compose, options

HEADER = [
    "recipe",
    "advantage",
    "policy loss",
    "aggregation",
    "clip (low/high)",
    "KL",
    "dynamic sampling",
    "overlong",
    "reward",
    "G",
    "prompts/rollout",
    "updates/rollout",
    "max resp.",
    "lr",
    "model",
    "deviations",
]
A, R = "actor_rollout_ref.actor.", "reward.custom_reward_function.reward_kwargs."


def _kl(cfg: DictConfig) -> str:
    a = cfg.actor_rollout_ref.actor
    if a.use_kl_loss:
        text = f"loss {a.kl_loss_type} {a.kl_loss_coef:g}"
    elif cfg.algorithm.use_kl_in_reward:
        text = f"reward {cfg.algorithm.kl_penalty} {cfg.algorithm.kl_ctrl.kl_coef:g}"
    else:
        text = "none"
    if cfg.rlvr.get("ref_reset_steps"):
        text += f", ref reset /{cfg.rlvr.ref_reset_steps}"
    return text


def _reward(cfg: DictConfig) -> str:
    kw = cfg.reward.custom_reward_function.get("reward_kwargs") or {}
    text = "acc ±1" if kw.get("incorrect_score", 0.0) == -1.0 else "acc 0/1"
    if kw.get("format_weight"):
        text += f" + {kw['format_weight']:g}·format"
    if kw.get("lang_weight"):
        text += f" + {kw['lang_weight']:g}·lang"
    return text


def _updates(cfg: DictConfig) -> str:
    a = cfg.actor_rollout_ref.actor
    text = str(cfg.data.train_batch_size // a.ppo_mini_batch_size * a.ppo_epochs)
    if cfg.algorithm.adv_estimator == "gae":
        c = cfg.critic
        text += f" (critic {cfg.data.train_batch_size // c.ppo_mini_batch_size * c.ppo_epochs})"
    return text


def _mark(text: str, deviations: set[str], keys: Iterable[str]) -> str:
    return text + ("†" if deviations & set(keys) else "")


def row(recipe: str) -> list[str]:
    cfg = compose([f"recipe={recipe}"])
    a, alg = cfg.actor_rollout_ref.actor, cfg.algorithm
    dev = set(cfg.rlvr.get("deviations") or {})
    adv = alg.adv_estimator + (
        "" if alg.adv_estimator != "grpo" else (" (std)" if alg.norm_adv_by_std_in_grpo else " (no std)")
    )
    fg = alg.filter_groups
    ob = (cfg.reward.get("reward_kwargs") or {}).get("overlong_buffer_cfg") or {}
    cells = [
        f"`{recipe}`",
        adv,
        a.policy_loss.loss_mode,
        a.loss_agg_mode,
        _mark(
            f"{a.clip_ratio_low:g}/{a.clip_ratio_high:g}", dev, [A + "clip_ratio_low", A + "clip_ratio_high"]
        ),
        _kl(cfg),
        f"{fg.metric}, ≤{fg.max_num_gen_batches} batches" if fg.enable else "off",
        f"buffer {ob['len']}" if ob.get("enable") else "off",
        _mark(_reward(cfg), dev, [R + "incorrect_score", R + "format_weight", R + "lang_weight"]),
        str(cfg.actor_rollout_ref.rollout.n),
        str(cfg.data.train_batch_size),
        _mark(_updates(cfg), dev, [A + "ppo_mini_batch_size", "critic.ppo_mini_batch_size"]),
        str(cfg.data.max_response_length),
        f"{a.optim.lr:g}",
        _mark(str(cfg.actor_rollout_ref.model.path), dev, ["actor_rollout_ref.model.path"]),
        ", ".join(".".join(k.split(".")[-2:]) for k in sorted(dev)) or "none",
    ]
    return cells


def table() -> str:
    """The Markdown table (the project's renderer, ``analysis.render``), one row per recipe."""
    return Table(HEADER, [row(r) for r in options("recipe")]).markdown()


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "/")


def _one_line(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "/")


def provenance_section(recipe: str) -> str:
    """One recipe's official settings (recipes/official/<recipe>.yaml) against the composed recipe."""
    t = official.load(recipe)
    cfg = compose([f"recipe={recipe}"])
    dev = dict(cfg.rlvr.get("deviations") or {})
    lines = [f"## `{recipe}`: {t.method}", ""]
    lines += [f"- {pid}: {_one_line(ref)}" for pid, ref in t.papers.items()]
    lines += [
        f"- Steps (the source counts {t.steps.get('source_counts')}): {_one_line(t.steps.get('note', ''))}",
        "",
    ]
    lines += ["| key | official value | source | this recipe |", "|---|---|---|---|"]
    for key, e in t.keys.items():
        got = OmegaConf.select(cfg, key)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        src = "<br>".join(f"`{c}`" if "@" in c else c for c in (e.source, *e.also))
        value = _fmt(e.value) + (f" ({_one_line(e.note)})" if e.note else "")
        mine = f"**deviation**: {_fmt(got)}; {_one_line(dev[key])}" if key in dev else "same, cited"
        lines.append(f"| `{key}` | {value} | {src} | {mine} |")
    if t.unstated:
        lines += ["", "Left open by the sources:", ""]
        lines += [f"- `{k}`: {_one_line(v)}" for k, v in t.unstated.items()]
    return "\n".join(lines)


def provenance_doc() -> str:
    """The body of docs/provenance.md: every recipe's official settings against the recipe."""
    return "\n\n".join(provenance_section(r) for r in options("recipe")) + "\n"


def command(args: DictConfig) -> int:
    """Print the fresh table (``make docs`` writes it into README.md)."""
    print(table())
    return 0


SECTIONS.add("recipes-table", lambda: Rendered(table()))
SECTIONS.add("recipes-provenance", lambda: Rendered(provenance_doc()))

main = hydra_main("command", "table", command)


if __name__ == "__main__":
    main()
