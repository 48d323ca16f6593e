"""The recipe table: one row per recipe, composed from ``conf/``.

:func:`table` is the Markdown table (the project's renderer, ``analysis.render``); a cell marked †
holds a value the recipe deliberately takes from elsewhere than its method's official setting
(``rlvr.deviations``); the last column names every deviated key. ``python -m recipes.table``
prints it (a Hydra app: ``conf/command/table.yaml``); ``make docs`` writes it into README.md (the
``recipes-table`` block, ``docgen.recipes``) and a test fails if it is stale, so the documentation
cannot drift from the configs. Does not write any file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from omegaconf import DictConfig

from analysis.render import Table
from core.cli import hydra_main
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


def row(recipe: str, cfg: DictConfig | None = None) -> list[str]:
    """The table's row of ``recipe`` (``cfg``: the recipe already composed, else composed here)."""
    cfg = compose([f"recipe={recipe}"]) if cfg is None else cfg
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


def table(composed: Callable[[str], DictConfig] | None = None) -> str:
    """The Markdown table (the project's renderer, ``analysis.render``), one row per recipe
    (``composed``: recipe -> its composed config, when the caller has them; else each is composed)."""
    return Table(HEADER, [row(r, composed(r) if composed else None) for r in options("recipe")]).markdown()


def command(args: DictConfig) -> int:
    """Print the fresh table (``make docs`` writes it into README.md)."""
    print(table())
    return 0


main = hydra_main("command", "table", command)


if __name__ == "__main__":
    main()
