"""veRL's own checks of a config, run after the project's (step 3 of :func:`recipes.validate.validate`).

``verl.utils.config.validate_config`` (what ``main_ppo`` runs) and ``omega_conf_to_dataclass`` on
``algorithm``, the actor and the rollout (not the critic: its model config is read from the model
files at init, which a dry run may not have; :mod:`recipes.validate.gpu` checks it), and loading
the custom reward function (``reward.custom_reward_function``). ``omega_conf_to_dataclass(cfg.reward)``
crashes on veRL 0.9.1, so the reward section is checked by rules instead. :func:`quiet` calls a
chatty veRL function with its prints and warnings captured.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a chatty veRL function with its prints and warnings captured."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def verl_checks(cfg: DictConfig, engine: str) -> list[str]:
    from verl.trainer.ppo.utils import need_reference_policy  # veRL: ~10 s; recipes.run --help must not wait
    from verl.utils.config import omega_conf_to_dataclass, validate_config  # same

    errs: list[str] = []
    for name in ("algorithm", "actor_rollout_ref.actor", "actor_rollout_ref.rollout"):
        try:
            quiet(omega_conf_to_dataclass, OmegaConf.select(cfg, name))
        except Exception as e:  # noqa: BLE001 - veRL raises TypeError/ValueError/AssertionError
            errs.append(f"[{name}] {type(e).__name__}: {e}")
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
        quiet(validate_config, checked, use_reference_policy=need_reference_policy(cfg), use_critic=False)
    except Exception as e:  # noqa: BLE001 - veRL uses assert for user input
        errs.append(f"[veRL validate_config] {type(e).__name__}: {e}")
    return errs


def reward_function(cfg: DictConfig) -> list[str]:
    fn = cfg.reward.custom_reward_function
    if not fn.get("path"):
        return []
    from verl.utils.import_utils import load_extern_object  # same

    try:
        quiet(load_extern_object, module_path=fn.path, object_name=fn.name)
    except Exception as e:  # noqa: BLE001
        return [
            f"[reward.custom_reward_function.path] cannot load {fn.name!r} from {fn.path!r}: "
            f"{type(e).__name__}: {e}"
        ]
    return []
