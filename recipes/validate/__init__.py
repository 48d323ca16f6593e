"""The one validation layer: everything that decides whether a composed config may launch.

:func:`validate` runs once per launch (``recipes.run``) and collects every error instead of
stopping at the first:
0. every interpolation resolves (a relation such as ``${rlvr.div:${data.train_batch_size},16}``
   fails by its full key when the batch is not a multiple): :mod:`recipes.validate.keys`;
1. the project's schemas: ``rlvr.*`` and ``local.*`` against :mod:`recipes.schema` (unknown
   keys by name, missing keys, types), every veRL value against its dataclass field type, and
   every key of a section veRL instantiates against its dataclass's fields (a ``+key`` veRL would
   refuse with a ``TypeError`` is named, with the closest field);
2. every rule of :data:`recipes.validate.registry.RULES` registered for the engine, one module per
   axis: value domains and veRL's names (:mod:`~recipes.validate.domains`), batch sizes and rollout
   groups (:mod:`~recipes.validate.batch`), KL (:mod:`~recipes.validate.kl`), the policy loss, its
   clipping and aggregation (:mod:`~recipes.validate.loss`), the reward and the reward function's
   options (:mod:`~recipes.validate.reward`), reward models and distillation teachers
   (:mod:`~recipes.validate.models`), on ``engine=verl`` the sizes and sections only a GPU run
   reaches (:mod:`~recipes.validate.gpu`) and the checks of veRL's V1 trainer, ``main_ppo``'s
   default (:mod:`~recipes.validate.v1`), on ``engine=local`` the engine's refusals
   (:mod:`~recipes.validate.local`);
3. veRL's own checks (:mod:`recipes.validate.verl_checks`): its dataclasses, ``validate_config``
   and loading the custom reward function.
Raises :class:`ConfigError` whose message lists each problem as ``[full.key] what; fix``, the keys
the user typed first (a key interpolated from one of them comes after a line naming the typed key:
:func:`~recipes.validate.keys.user_first`).
"""

from __future__ import annotations

from collections.abc import Iterable

from omegaconf import DictConfig

from recipes.schema import project_errors, type_errors, unknown_field_errors
from recipes.validate import batch, domains, gpu, kl, local, loss, models, reward, v1  # noqa: F401  (register their rules)
from recipes.validate.keys import resolution_errors, user_first
from recipes.validate.registry import RULES, check_rules
from recipes.validate.verl_checks import quiet, reward_function, verl_checks

__all__ = ["RULES", "ConfigError", "quiet", "resolution_errors", "user_first", "validate"]


class ConfigError(ValueError):
    """A recipe config that must not be launched; ``errors`` holds one line per problem.

    The message starts with the first problem on its own line (``invalid config: [key] ...``), the
    others follow indented, one per line."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("invalid config: " + "\n  ".join(errors))


def validate(cfg: DictConfig, engine: str = "verl", given: Iterable[str] = ()) -> None:
    """Raise ``ConfigError`` listing every problem in ``cfg``; return quietly when it is launchable.

    ``engine`` is ``"verl"`` (GPU world sizes are checked as configured) or ``"local"`` (sizes are
    checked as for one device, and the local engine's refusals apply). ``given``: the overrides the
    user typed (``key=value``); their problems are listed first (:func:`user_first`).
    """
    errs = resolution_errors(cfg) + project_errors(cfg) + unknown_field_errors(cfg) + type_errors(cfg)
    if not errs:  # rules read resolved, typed values; a broken one would only make them repeat it
        errs = check_rules(cfg, engine)
    if not errs:
        errs = verl_checks(cfg, engine) + reward_function(cfg)
    if errs:
        typed = dict(o.lstrip("+~").split("=", 1) for o in given if "=" in o)
        raise ConfigError(user_first(errs, cfg, typed))
