"""Recipes equal their methods' official settings key by key, or record why not.

The official settings are transcribed by hand, with a citation per value, in
``recipes/official/<recipe>.yaml`` (from each method's code at a pinned commit and its paper);
Hydra never reads those files. For every transcribed key the composed recipe must either hold the
official value and cite the same source in ``rlvr.sources``, or list the key in
``rlvr.deviations`` with a reason (and then really differ). A key missing from the recipe does not
pass silently: veRL's default would have to equal the official value.
"""

from __future__ import annotations

import pytest
from omegaconf import DictConfig, OmegaConf

from recipes import official
from recipes.compose import compose, options

RECIPES = official.recipes()
MISSING = "<missing>"


def _plain(value):
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def provenance_errors(recipe: str, cfg: DictConfig) -> list[str]:
    """Every disagreement between a composed recipe and its transcription (empty when they agree)."""
    t = official.load(recipe)
    sources = dict(cfg.rlvr.get("sources") or {})
    deviations = dict(cfg.rlvr.get("deviations") or {})
    errs = []
    for key, entry in t.keys.items():
        got = _plain(OmegaConf.select(cfg, key, default=MISSING))
        if got == MISSING:
            errs.append(f"{key}: transcribed but not a key of the composed config")
        elif key in deviations:
            if entry.accepts(got):
                errs.append(f"{key}: listed in rlvr.deviations but equals the official {entry.value!r}")
        elif not entry.accepts(got):
            errs.append(
                f"{key}={got!r} but the official value is {entry.value!r} ({entry.source}); "
                "set it, or list it in rlvr.deviations with the reason"
            )
        elif sources.get(key) != entry.source:
            errs.append(f"rlvr.sources[{key}]={sources.get(key)!r}, the transcription cites {entry.source!r}")
    for key in sources:
        if key not in t.keys:
            errs.append(f"rlvr.sources cites {key}, which recipes/official/{recipe}.yaml does not transcribe")
    for key, why in deviations.items():
        if key not in t.keys:
            errs.append(f"rlvr.deviations lists {key}, which has no official value to deviate from")
        if not isinstance(why, str) or len(why.split()) < 5:
            errs.append(f"rlvr.deviations[{key}] needs a reason, got {why!r}")
        if key in sources:
            errs.append(f"{key} is both cited and listed as a deviation")
    return errs


@pytest.fixture(scope="module")
def composed(hydra_ctx):
    cache: dict[tuple[str, ...], DictConfig] = {}

    def get(*overrides: str) -> DictConfig:
        if overrides not in cache:
            cache[overrides] = compose(list(overrides))
        return cache[overrides]

    return get


def test_every_recipe_has_a_transcription():
    assert set(options("recipe")) == set(RECIPES)


@pytest.mark.parametrize("recipe", RECIPES)
def test_transcription_cites_pinned_sources(recipe):
    """Each official value cites code at a 40-hex commit and a line, or a paper section."""
    t = official.load(recipe)
    assert t.papers and len(t.keys) >= 15, "a transcription names its papers and the keys they set"
    bad = [
        f"{key}: {err}"
        for key, entry in t.keys.items()
        for text in (entry.source, *entry.also)
        if (err := t.citation_error(text))
    ]
    assert not bad, "\n".join(bad)
    assert t.steps.get("source_counts") and t.steps.get("note"), "what the source's step counts"


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_equals_its_official_settings(composed, recipe):
    errs = provenance_errors(recipe, composed(f"recipe={recipe}"))
    assert not errs, f"{recipe}:\n  " + "\n  ".join(errs)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_citations_are_pinned(composed, recipe):
    t = official.load(recipe)
    sources = composed(f"recipe={recipe}").rlvr.sources
    assert sources, "a recipe cites its values"
    bad = [f"{k}: {err}" for k, text in sources.items() if (err := t.citation_error(text))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    "override,expect",
    [
        # a value drifts from the script
        ("actor_rollout_ref.actor.optim.weight_decay=0.01", "optim.weight_decay=0.01"),
        # an undeclared deviation of a transcribed key
        ("actor_rollout_ref.rollout.n=8", "rollout.n=8"),
    ],
)
def test_drift_from_the_official_settings_is_reported(composed, override, expect):
    """The check itself can fail: each kind of drift on DAPO produces a named error."""
    errs = provenance_errors("dapo", composed("recipe=dapo", override))
    assert any(expect in e for e in errs), errs


def test_a_deviation_that_is_no_longer_one_is_reported(composed):
    cfg = OmegaConf.create(OmegaConf.to_container(composed("recipe=dapo"), resolve=False))
    cfg.rlvr.deviations["data.gen_batch_size"] = "an absolute count would not shrink with the scale"
    del cfg.rlvr.sources["data.gen_batch_size"]
    errs = provenance_errors("dapo", cfg)
    assert any("data.gen_batch_size: listed in rlvr.deviations but equals" in e for e in errs), errs


def test_a_rewritten_citation_is_reported(composed):
    cfg = OmegaConf.create(OmegaConf.to_container(composed("recipe=dapo"), resolve=False))
    cfg.rlvr.sources["data.train_batch_size"] = "DAPO §4.1"
    errs = provenance_errors("dapo", cfg)
    assert any("rlvr.sources[data.train_batch_size]" in e for e in errs), errs


def test_official_value_left_to_a_default_is_caught(composed):
    """A key the source sets is checked even when the recipe file never mentions it."""
    t = official.load("dapo")
    assert "actor_rollout_ref.actor.entropy_coeff" in t.keys  # set by the script, veRL default 0
    errs = provenance_errors("dapo", composed("recipe=dapo", "actor_rollout_ref.actor.entropy_coeff=0.01"))
    assert any("entropy_coeff=0.01" in e for e in errs), errs


def test_r1_step_counts_are_converted_from_updates_to_rollouts(composed):
    """R1-Zero counts updates: 10,400 steps and a reset every 400, 16 updates per rollout."""
    cfg = composed("recipe=r1_zero")
    a = cfg.actor_rollout_ref.actor
    updates_per_rollout = cfg.data.train_batch_size // a.ppo_mini_batch_size * a.ppo_epochs
    assert updates_per_rollout == 16
    assert cfg.data.train_batch_size * cfg.actor_rollout_ref.rollout.n == 8192
    assert cfg.trainer.total_training_steps * updates_per_rollout == 10400
    assert cfg.rlvr.ref_reset_steps * updates_per_rollout == 400


def test_drgrpo_constant_normaliser_is_max_length(composed):
    cfg = composed("recipe=drgrpo")
    assert cfg.actor_rollout_ref.actor.loss_scale_factor == cfg.data.max_response_length == 3000


def test_dapo_scores_correctness_plus_minus_one_with_the_overlong_penalty_in_proportion(composed):
    """DAPO eq. 7 (+1/-1) against a penalty of at most -1: a correct answer at the limit scores 0."""
    cfg = composed("recipe=dapo")
    assert cfg.reward.custom_reward_function.reward_kwargs.incorrect_score == -1.0
    ob = cfg.reward.reward_kwargs.overlong_buffer_cfg
    assert ob.enable and ob.penalty_factor == 1.0 and cfg.reward.reward_manager.name == "dapo"
    assert cfg.reward.reward_kwargs.max_resp_len == cfg.data.max_response_length


@pytest.mark.parametrize(
    "overrides,low,high",
    [
        (["loss=gspo"], 3e-4, 4e-4),
        (["loss=cispo"], 1.0, 4.0),
        (["recipe=grpo", "loss=gspo"], 3e-4, 4e-4),
        (["recipe=gspo", "loss=vanilla"], 0.2, 0.2),
        (["loss=gspo", "clip=ppo"], 0.2, 0.2),  # an explicit clip wins (the validation layer's job)
    ],
)
def test_a_loss_variant_picks_its_clip_range(composed, overrides, low, high):
    a = composed(*overrides).actor_rollout_ref.actor
    assert (a.clip_ratio_low, a.clip_ratio_high) == pytest.approx((low, high))


def test_r1_zero_format_reward_on(composed):
    assert 0 < composed("recipe=r1_zero").reward.custom_reward_function.reward_kwargs.format_weight < 0.5


def test_provenance_doc_is_fresh(hydra_ctx):
    from docgen.blocks import generate  # the docs' whole list of blocks: only this test needs it

    assert generate(check=True, only=["recipes-provenance"]) == [], "docs/provenance.md is stale: make docs"
