"""EvaluationConfig: the settings of an evaluation, resolved and checked once; its key."""

from __future__ import annotations

import pytest

from calibdash.errors import ConfigError
from calibdash.estimators.registry import DEFAULT_ESTIMATORS, default_grid
from calibdash.evaluation.config import EvaluationConfig, config_fingerprint
from calibdash.metrics.literature import DEFAULT_OTHERS

SHA = "ab" * 32


def test_defaults_are_written_out_and_spellings_of_the_same_run_are_equal():
    implicit = EvaluationConfig.resolve("top-label")
    assert implicit.estimators == DEFAULT_ESTIMATORS["top-label"]
    assert implicit.others == DEFAULT_OTHERS["top-label"]
    assert implicit.grid("kde") == default_grid("kde", "top-label")
    explicit = EvaluationConfig.resolve("top-label", estimators=list(DEFAULT_ESTIMATORS["top-label"]),
                                        grids={"kde": default_grid("kde", "top-label")},
                                        others=list(DEFAULT_OTHERS["top-label"]), test_size=0.2, n_folds=5, random_state=0)
    assert explicit == implicit and hash(explicit) == hash(implicit) and explicit.key(SHA) == implicit.key(SHA)
    assert {implicit: 1}[explicit] == 1  # usable as a cache key


def test_every_setting_changes_the_key():
    base = EvaluationConfig.resolve("canonical", estimators=["kde"])
    changed = [
        EvaluationConfig.resolve("canonical", estimators=["kde"], random_state=1),
        EvaluationConfig.resolve("canonical", estimators=["kde"], test_size=0.3),
        EvaluationConfig.resolve("canonical", estimators=["kde"], n_folds=4),
        EvaluationConfig.resolve("canonical", estimators=["kde"], others=[]),
        EvaluationConfig.resolve("canonical", estimators=["kde"], grids={"kde": {"bandwidth": [0.1]}}),
        EvaluationConfig.resolve("canonical", estimators=["kde", "ukkr"]),
    ]
    keys = {c.key(SHA) for c in changed} | {base.key(SHA), base.key("cd" * 32)}
    assert len(keys) == len(changed) + 2


def test_the_key_is_the_fingerprint_and_round_trips_as_json():
    config = EvaluationConfig.resolve("classwise", estimators=["bins"], grids={"bins": {"n_bins": [5, 10]}}, random_state=3)
    assert config.key(SHA) == config_fingerprint(SHA, "classwise", ["bins"], {"bins": {"n_bins": [5, 10]}}, random_state=3)
    d = config.to_dict()
    assert d["grids"] == {"bins": {"n_bins": [5, 10], "strategy": ["uniform"]}} and d["random_state"] == 3
    again = EvaluationConfig.resolve(d["notion"], estimators=d["estimators"], grids=d["grids"], others=d["others"],
                                     test_size=d["test_size"], n_folds=d["n_folds"], random_state=d["random_state"])
    assert again == config
    with pytest.raises(AttributeError):
        config.notion = "canonical"  # frozen


@pytest.mark.parametrize("kwargs,message", [
    ({"test_size": 1.0}, "test_size must lie strictly between 0 and 1"),
    ({"test_size": "0.2"}, "test_size must lie strictly between 0 and 1"),
    ({"n_folds": 1}, "n_folds must be an integer of at least 2"),
    ({"n_folds": 2.5}, "n_folds must be an integer of at least 2"),
    ({"random_state": -1}, "random_state must be a non-negative integer"),
    ({"estimators": ["nope"]}, "Unknown estimator 'nope'"),
    ({"grids": {"kde": {"bandwidth": [-1.0]}}}, "bandwidth must be a positive"),
    ({"others": ["nope"]}, "Unknown estimator 'nope'"),
])
def test_bad_settings_are_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        EvaluationConfig.resolve("top-label", **kwargs)
    assert isinstance(info.value, ConfigError)


def test_grid_of_an_estimator_not_run_is_an_error():
    with pytest.raises(ConfigError, match="'ukkr' is not among the estimators of this configuration"):
        EvaluationConfig.resolve("top-label", estimators=["kde"]).grid("ukkr")


def test_for_notions_shares_the_split_by_construction():
    from calibdash.evaluation.config import shared_split

    configs = EvaluationConfig.for_notions(("top-label", "canonical"), estimators={"top-label": ["bins"], "canonical": ["kde"]},
                                           others=[], test_size=0.3, n_folds=4, random_state=7)
    assert [c.notion for c in configs] == ["top-label", "canonical"]
    assert configs[0] == EvaluationConfig.resolve("top-label", estimators=["bins"], others=[], test_size=0.3, n_folds=4,
                                                  random_state=7)
    assert configs[1].estimators == ("kde",)
    assert {c.split for c in configs} == {(0.3, 4, 7)} and shared_split(configs) == (0.3, 4, 7)
    # one value for every notion, and a dict keyed by notion must cover them all
    assert [c.estimators for c in EvaluationConfig.for_notions(["top-label", "canonical"], estimators=["kde"])] == [("kde",)] * 2
    with pytest.raises(ConfigError, match="not for 'canonical'"):
        EvaluationConfig.for_notions(["top-label", "canonical"], estimators={"top-label": ["kde"]})
    with pytest.raises(ConfigError, match="listed twice"):
        EvaluationConfig.for_notions(["canonical", "canonical"])
    with pytest.raises(ConfigError, match="at least one notion"):
        EvaluationConfig.for_notions([])


def test_configurations_with_different_splits_are_refused_together():
    from calibdash.evaluation.config import shared_split

    top = EvaluationConfig.resolve("top-label", random_state=1)
    with pytest.raises(ConfigError, match="share its split.*random_state=2"):
        shared_split([top, EvaluationConfig.resolve("canonical", random_state=2)])
    with pytest.raises(ConfigError, match="listed twice"):
        shared_split([top, top])
    with pytest.raises(ConfigError, match="EvaluationConfig"):
        shared_split([top.to_dict()])
