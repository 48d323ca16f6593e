"""Validate a composed recipe config before anything is launched.

Runs, in order, and collects every error instead of stopping at the first:
1. the project's cross-field rules (``recipes.rules``);
2. a type check of every value against veRL's dataclass field types (``recipes.typecheck``);
3. veRL's own checks: ``verl.utils.config.validate_config`` (what ``main_ppo`` runs) and
   ``omega_conf_to_dataclass`` on ``algorithm``, the actor and the rollout (not the critic:
   its model config is read from the model files at init, which a dry run may not have);
4. registry lookups: advantage estimator, policy loss, loss aggregation mode, reward manager,
   and the custom reward function (``reward.custom_reward_function``).
``omega_conf_to_dataclass(cfg.reward)`` crashes on veRL 0.9.1, so the reward section is
checked field by field here instead. Raises ``ConfigError`` whose message lists each problem
as ``[full.key] what; fix``.
"""

from __future__ import annotations

import contextlib
import io
import warnings

from omegaconf import DictConfig, OmegaConf, open_dict

from recipes.rules import check_rules
from recipes.typecheck import type_errors

AGG_MODES = (
    "token-mean",
    "token-sum",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)


class ConfigError(ValueError):
    """A recipe config that must not be launched; ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("invalid config:\n  " + "\n  ".join(errors))


def _quiet(fn, *args, **kwargs):
    """Call a chatty veRL function with its prints and warnings captured."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _verl_checks(cfg: DictConfig, engine: str) -> list[str]:
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.utils import need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    errs: list[str] = []
    sections = {
        "algorithm": cfg.algorithm,
        "actor_rollout_ref.actor": cfg.actor_rollout_ref.actor,
        "actor_rollout_ref.rollout": cfg.actor_rollout_ref.rollout,
    }
    for name, node in sections.items():
        try:
            _quiet(omega_conf_to_dataclass, node)
        except Exception as e:  # noqa: BLE001 - veRL raises TypeError/ValueError/AssertionError
            errs.append(f"[{name}] {type(e).__name__}: {e}")
    try:
        core_algos.get_adv_estimator_fn(cfg.algorithm.adv_estimator)
    except Exception as e:  # noqa: BLE001
        errs.append(f"[algorithm.adv_estimator] {e}")
    try:
        core_algos.get_policy_loss_fn(cfg.actor_rollout_ref.actor.policy_loss.loss_mode)
    except Exception as e:  # noqa: BLE001
        errs.append(f"[actor_rollout_ref.actor.policy_loss.loss_mode] {e}")
    if cfg.actor_rollout_ref.actor.loss_agg_mode not in AGG_MODES:
        errs.append(
            f"[actor_rollout_ref.actor.loss_agg_mode] {cfg.actor_rollout_ref.actor.loss_agg_mode!r}; "
            f"fix: one of {', '.join(AGG_MODES)}"
        )
    if errs:  # validate_config would only repeat the dataclass failures
        return errs
    checked = cfg
    if engine == "local":  # one process, no GPUs: validate sizes as for a single device
        checked = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
        with open_dict(checked):
            checked.trainer.n_gpus_per_node, checked.trainer.nnodes = 1, 1
    try:
        # use_critic=False: the critic's HFModelConfig reads the model's config.json at init (hub or
        # local path), which a dry run on a machine without the model cannot do; rules cover the critic.
        _quiet(validate_config, checked, use_reference_policy=need_reference_policy(cfg), use_critic=False)
    except Exception as e:  # noqa: BLE001 - veRL uses assert for user input
        errs.append(f"[veRL validate_config] {type(e).__name__}: {e}")
    return errs


def _reward_checks(cfg: DictConfig) -> list[str]:
    errs: list[str] = []
    name = cfg.reward.reward_manager.name
    try:
        from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

        _quiet(get_reward_manager_cls, name)
    except ValueError as e:
        errs.append(f"[reward.reward_manager.name] {e}; fix: naive or dapo")
    fn = cfg.reward.custom_reward_function
    if fn.get("path"):
        try:
            from verl.utils.import_utils import load_extern_object

            _quiet(load_extern_object, module_path=fn.path, object_name=fn.name)
        except Exception as e:  # noqa: BLE001
            errs.append(
                f"[reward.custom_reward_function.path] cannot load {fn.name!r} from {fn.path!r}: "
                f"{type(e).__name__}: {e}"
            )
    return errs


def validate(cfg: DictConfig, engine: str = "verl") -> None:
    """Raise ``ConfigError`` listing every problem in ``cfg``; return quietly when it is launchable.

    ``engine`` is ``"verl"`` (GPU world sizes are checked as configured) or ``"local"``
    (sizes are checked as for one device).
    """
    errs = check_rules(cfg) + type_errors(cfg)
    if not errs:
        errs += _verl_checks(cfg, engine) + _reward_checks(cfg)
    if errs:
        raise ConfigError(errs)
