"""Generate the README's recipe table from ``conf/`` (``python -m recipes.table``).

The README embeds this table between ``<!-- recipes-table:start -->`` and
``<!-- recipes-table:end -->``; a test regenerates it and fails if the two disagree, so the
documentation cannot drift from the configs. ``write=true`` updates README.md in place (a Hydra
app: ``conf/command/table.yaml``).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from analysis.render import Table
from core.cli import hydra_main
from recipes.compose import compose, options

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- recipes-table:start -->", "<!-- recipes-table:end -->"
HEADER = [
    "recipe",
    "advantage",
    "policy loss",
    "aggregation",
    "clip (low/high)",
    "KL",
    "dynamic sampling",
    "overlong",
    "G",
    "prompts/step",
    "max resp.",
    "lr",
    "model",
]


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


def row(recipe: str) -> list[str]:
    cfg = compose([f"recipe={recipe}"])
    a, alg = cfg.actor_rollout_ref.actor, cfg.algorithm
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
        f"{a.clip_ratio_low:g}/{a.clip_ratio_high:g}",
        _kl(cfg),
        f"{fg.metric}, ≤{fg.max_num_gen_batches} batches" if fg.enable else "off",
        f"buffer {ob['len']}" if ob.get("enable") else "off",
        str(cfg.actor_rollout_ref.rollout.n),
        str(cfg.data.train_batch_size),
        str(cfg.data.max_response_length),
        f"{a.optim.lr:g}",
        str(cfg.actor_rollout_ref.model.path),
    ]
    return cells


def table() -> str:
    """The Markdown table (the project's renderer, ``analysis.render``), one row per recipe."""
    return Table(HEADER, [row(r) for r in options("recipe")]).markdown()


def readme_table(text: str) -> str:
    """The table currently embedded in README text ('' when the markers are missing)."""
    if START not in text or END not in text:
        return ""
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def command(args: DictConfig) -> int:
    """Print the fresh table (and write it into README.md with ``write=true``)."""
    fresh = table()
    if args.write:
        text = README.read_text()
        if START in text and END in text:
            head, rest = text.split(START, 1)
            text = f"{head}{START}\n{fresh}\n{END}{rest.split(END, 1)[1]}"
        else:
            text += f"\n{START}\n{fresh}\n{END}\n"
        README.write_text(text)
    print(fresh)
    return 0


main = hydra_main("command", "table", command)


if __name__ == "__main__":
    main()
