"""The one validation layer: everything that decides whether a composed config may launch.

:func:`validate` runs once per launch (``recipes.run``) and collects every error instead of
stopping at the first:
0. every interpolation resolves (a relation such as ``${rlvr.div:${data.train_batch_size},16}``
   fails by its full key when the batch is not a multiple);
1. the project's schemas: ``rlvr.*`` and ``local.*`` against :mod:`recipes.schema` (unknown
   keys by name, missing keys, types), every veRL value against its dataclass field type, and
   every key of a section veRL instantiates against its dataclass's fields (a ``+key`` veRL would
   refuse with a ``TypeError`` is named, with the closest field);
2. every rule of :data:`recipes.rules.RULES` registered for the engine: value domains,
   cross-field rules, registry lookups (:mod:`recipes.rules`), a loss variant's clip range
   (:mod:`recipes.rules_loss`), the reward function's options (:mod:`recipes.rules_reward`), and
   on ``engine=local`` the engine's refusals (:mod:`recipes.rules_local`);
3. veRL's own checks: ``verl.utils.config.validate_config`` (what ``main_ppo`` runs) and
   ``omega_conf_to_dataclass`` on ``algorithm``, the actor and the rollout (not the critic: its
   model config is read from the model files at init, which a dry run may not have), and loading
   the custom reward function (``reward.custom_reward_function``).
``omega_conf_to_dataclass(cfg.reward)`` crashes on veRL 0.9.1, so the reward section is checked
by rules instead. Raises :class:`ConfigError` whose message lists each problem as
``[full.key] what; fix``, the keys the user typed first (a key interpolated from one of them comes
after a line naming the typed key: :func:`user_first`).
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue

from recipes import rules_gpu, rules_local, rules_loss, rules_reward, rules_rm  # noqa: F401  (register their rules)
from recipes.compose import flatten
from recipes.rules import check_rules
from recipes.schema import project_errors, type_errors, unknown_field_errors


class ConfigError(ValueError):
    """A recipe config that must not be launched; ``errors`` holds one line per problem.

    The message starts with the first problem on its own line (``invalid config: [key] ...``), the
    others follow indented, one per line."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("invalid config: " + "\n  ".join(errors))


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a chatty veRL function with its prints and warnings captured."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _verl_checks(cfg: DictConfig, engine: str) -> list[str]:
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


def _reward_function(cfg: DictConfig) -> list[str]:
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


def resolution_errors(node: DictConfig | ListConfig, prefix: str = "") -> list[str]:
    """``[full.key] why`` for every value whose interpolation does not resolve (``???`` is skipped)."""
    errs: list[str] = []
    keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        full = f"{prefix}.{key}" if prefix else str(key)
        try:
            value = node[key]
        except MissingMandatoryValue:
            continue
        except InterpolationResolutionError as e:
            why = str(e).splitlines()[0].split("while resolving interpolation: ", 1)[-1]
            errs.append(f"[{full}] {why}")
            continue
        if isinstance(value, (DictConfig, ListConfig)):
            errs += resolution_errors(value, full)
    return errs


def _refs(text: str) -> set[str]:
    """Absolute keys an interpolation reads (``${a.b}``, ``${rlvr.div:${a.b},16}``, ``${oc.select:a.b,x}``)."""
    keys = set(re.findall(r"\$\{([A-Za-z_][\w.]*)\}", text))
    keys |= set(re.findall(r"\$\{oc\.select:([A-Za-z_][\w.]*)", text))
    return keys


def _blame(key: str, given: dict[str, str], deps: dict[str, set[str]]) -> str | None:
    """The user's key ``key`` is (or lies under, or is read by, directly or through other keys)."""
    seen, todo = set(), [key]
    while todo:
        k = todo.pop()
        for g in given:
            if k == g or k.startswith(g + "."):
                return g
        if k not in seen:
            seen.add(k)
            todo += deps.get(k, ())
    return None


def user_first(errs: list[str], cfg: DictConfig, given: dict[str, str]) -> list[str]:
    """``errs`` with the problems of the keys the user typed (``given``: key -> value as typed) first.

    A problem of a key interpolated from a given key (``ppo_mini_batch_size: ${data.train_batch_size}``)
    puts a line naming the given key before it: ``[data.train_batch_size] abc (you typed it) breaks the
    keys that read it: ...``. The other problems keep their order.
    """
    if not given or not errs:
        return errs
    flat = flatten(cfg, resolve=False)
    deps = {k: _refs(v) for k, v in flat.items() if isinstance(v, str) and "${" in v}
    mine: dict[str, list[str]] = {}
    rest: list[str] = []
    for e in errs:
        key = e[1 : e.index("]")] if e.startswith("[") and "]" in e else ""
        owner = _blame(key, given, deps) if key else None
        (mine.setdefault(owner, []) if owner else rest).append(e)
    out: list[str] = []
    for owner, lines in mine.items():
        if not any(line.startswith(f"[{owner}]") for line in lines):
            readers = [line[1 : line.index("]")] for line in lines]
            types = sorted({m for line in lines for m in re.findall(r"expected (\w+)", line)})
            need = f" (they expect {' or '.join(types)})" if types else ""
            fix = f"; fix: {owner}=<{types[0]}>" if len(types) == 1 else f"; fix: give {owner} a valid value"
            out.append(
                f"[{owner}] {given[owner]!r} (as you typed it) breaks the keys that read it: "
                f"{', '.join(readers)}{need}{fix}"
            )
        out += lines
    return out + rest


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
        errs = _verl_checks(cfg, engine) + _reward_function(cfg)
    if errs:
        typed = dict(o.lstrip("+~").split("=", 1) for o in given if "=" in o)
        raise ConfigError(user_first(errs, cfg, typed))
