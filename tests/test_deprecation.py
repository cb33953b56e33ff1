"""One vocabulary, the scientific Python one (calibdash.deprecation).

No public signature exposes a retired name (``n_boot``, ``seed``, ``binning``,
``group_columns``) and no public estimate-with-a-standard-error exposes ``value`` other than
as a warning alias of ``estimate``; the retired names still work for one release, with a
DeprecationWarning, and give the same numbers as the new ones; result files written before
the renaming still load.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import calibdash as cd
from calibdash.deprecation import RETIRED, renamed_attribute, renamed_parameters
from tests.test_package import package_modules

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calibdash"
# Scripts that Streamlit runs and nothing imports: read as source below, not imported.
SCRIPTS = "calibdash_app.app_pages."


def _public(name):
    return not name.startswith("_")


def _retired_in_signature(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and C types without a signature
        return []
    return [p for p in params if p in RETIRED]


def _is_warning_alias(attr):
    return isinstance(attr, property) and getattr(attr.fget, "__deprecated__", None) is not None


def vocabulary_problems(objects):
    """What in ``objects`` ({qualified name: module, function or class}) speaks the retired
    vocabulary: a public function or method whose signature has a retired parameter, or a
    public class holding an estimate and its standard error (``se``) whose ``value`` is not
    the warning alias of ``estimate`` (``value`` alone, as a limit's or a grid edge's, is a
    value, not an estimate)."""
    found = []
    for qualname, obj in objects.items():
        if inspect.isclass(obj):
            members = {"__init__": obj} if not dataclasses.is_dataclass(obj) else {"(fields)": obj}
            members.update({n: m for n, m in vars(obj).items() if _public(n) and callable(m)})
            for name, member in members.items():
                for p in _retired_in_signature(member):
                    found.append(f"{qualname}.{name} has parameter {p!r} (use {RETIRED[p]!r})")
            fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
            names = fields | {n for n in dir(obj) if _public(n)}
            if "se" in names and "value" in names and not _is_warning_alias(inspect.getattr_static(obj, "value", None)):
                found.append(f"{qualname} exposes 'value' without a warning (use 'estimate')")
        elif callable(obj):
            for p in _retired_in_signature(obj):
                found.append(f"{qualname} has parameter {p!r} (use {RETIRED[p]!r})")
    return found


def public_objects():
    """Every public function and class defined in an importable calibdash module."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Streamlit's "no running app" warnings
        for name in sorted(package_modules()):
            if name.startswith(SCRIPTS) or name == "calibdash.__main__":
                continue
            module = importlib.import_module(name)
            for attr, obj in vars(module).items():
                if _public(attr) and (inspect.isfunction(obj) or inspect.isclass(obj)) \
                        and getattr(obj, "__module__", None) == name:
                    out[f"{name}.{attr}"] = obj
    return out


def source_problems(paths):
    """The retired names in the source of ``paths``: a public ``def`` with a retired parameter
    (the page scripts are not imported), or a call passing a retired keyword (calibdash's
    own callers use the new names, so its users see no warning it caused)."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(node.name):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                found += [f"{path.name}:{node.lineno} def {node.name}({a.arg}=)" for a in args if a.arg in RETIRED]
            elif isinstance(node, ast.Call):
                callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if callee == "renamed_parameters":
                    continue
                found += [f"{path.name}:{node.lineno} passes {k.arg}=" for k in node.keywords if k.arg in RETIRED]
    return found


def test_no_public_signature_speaks_the_retired_vocabulary():
    objects = public_objects()
    assert {"calibdash.metrics.ece.ece", "calibdash_app.downloads.download_name",
            "calibdash.metrics.skce.SKCEEstimate", "calibdash.io.loading.load_predictions"} <= set(objects)
    problems = vocabulary_problems(objects)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_the_package_source_uses_only_the_new_names():
    problems = source_problems(sorted(PACKAGE.rglob("*.py")))
    assert not problems, "\n".join(problems)


def test_the_checks_can_fail(tmp_path):
    def made_up(P, y, *, n_boot=200):
        return n_boot

    @dataclasses.dataclass(frozen=True)
    class Estimate:
        value: float
        se: float

    @dataclasses.dataclass(frozen=True)
    class Fixed:
        estimate: float
        se: float
        value = renamed_attribute("estimate", "value")

    problems = vocabulary_problems({"made_up": made_up, "Estimate": Estimate, "Fixed": Fixed})
    assert problems == ["made_up has parameter 'n_boot' (use 'n_resamples')",
                        "Estimate exposes 'value' without a warning (use 'estimate')"], problems
    # the shim keeps the new signature visible, so the checker passes a decorated function
    assert vocabulary_problems({"shimmed": renamed_parameters(n_boot="n_resamples")(lambda *, n_resamples=1: 0)}) == []
    script = tmp_path / "page.py"
    script.write_text("def continuous_curve(n_boot, bandwidth):\n    pass\n\nf(seed=1)\nrenamed_parameters(seed='random_state')\n")
    assert source_problems([script]) == ["page.py:1 def continuous_curve(n_boot=)", "page.py:4 passes seed="]


# -- the retired names still work, with a warning that names the new name ------------------
def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(d), size=n)
    y = np.array([rng.choice(d, p=p) for p in P])
    return P, y


def _same(a, b):
    import pandas as pd

    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
        assert a.attrs.keys() == b.attrs.keys() and all(np.array_equal(a.attrs[k], b.attrs[k]) for k in a.attrs)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b, equal_nan=True)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b)
    else:
        assert a == b


def _cases():
    from calibdash.clinical.validation import analyse_sample
    from calibdash.display import reliability as rl
    from calibdash.display import views
    from calibdash.io.loading import load_predictions
    from calibdash.metrics import ece as ece_module
    from calibdash_app import downloads, runs  # noqa: F401  (their functions are among the decorated ones)

    P, y = _data()
    conf, correct = rl.top_label(P, y)
    pred = cd.load_predictions(P, y)
    p = P[:, 1] / P[:, :2].sum(axis=1)
    yb = (y == 1).astype(float)
    frame = __import__("pandas").DataFrame({"p_yes": p, "label": np.where(yb == 1, "yes", "no"),
                                            "site": np.where(np.arange(len(p)) % 2, "a", "b")})
    # (function, positional arguments, old keywords, new keywords, what to compare)
    return {
        "calibdash.metrics.ece.ece": [
            (ece_module.ece, (P, y), {"binning": "mass"}, {"strategy": "quantile"}, None),
            (ece_module.ece, (P, y), {"binning": "width"}, {"strategy": "uniform"}, None)],
        "calibdash.metrics.ece.ece_bootstrap": [
            (ece_module.ece_bootstrap, ("ece-mass-sqrt", P, y), {"n_boot": 20}, {"n_resamples": 20}, None)],
        "calibdash.metrics.ece.bootstrap_counts": [
            (ece_module.bootstrap_counts, (50,), {"n_boot": 7}, {"n_resamples": 7}, None)],
        "calibdash.display.reliability.reliability_table": [
            (rl.reliability_table, (conf, correct), {"n_boot": 30}, {"n_resamples": 30}, None)],
        "calibdash.display.reliability.continuous_reliability_curve": [
            (rl.continuous_reliability_curve, (P, y), {"n_boot": 10, "grid": 21}, {"n_resamples": 10, "grid": 21},
             None)],
        "calibdash.display.views.top_label_view": [
            (views.top_label_view, (pred,), {"n_boot": 10}, {"n_resamples": 10}, lambda v: v.table)],
        "calibdash.clinical.validation.analyse_sample": [
            (analyse_sample, (p, yb), {"seed": 3, "n_resamples": 20, "level": 0.9},
             {"random_state": 3, "n_resamples": 20, "level": 0.9}, lambda a: sorted(a.values.items()))],
        "calibdash.io.loading.load_predictions": [
            (load_predictions, (frame,), {"group_columns": ["site"]}, {"groups": ["site"]},
             lambda q: (q.probs, q.labels, q.sha256, sorted((k, list(v)) for k, v in q.groups.items())))],
        "calibdash_app.downloads.download_name": [
            (downloads.download_name, ("summary", "csv", "data"), {"seed": 4}, {"random_state": 4}, None)],
    }


# Decorated functions that need an evaluation or start jobs (their numbers come from the
# functions checked above): for them, the
# new name in the visible signature and the renaming the wrapper does.
RENAMING_ONLY = {"calibdash.display.views.per_class_view", "calibdash.reporting.html.report", "calibdash.reporting.html.comparison_report",
                 "calibdash_app.runs.lab_estimates", "calibdash_app.runs.lab_figure1"}
CASES = ["calibdash.metrics.ece.ece", "calibdash.metrics.ece.ece_bootstrap", "calibdash.metrics.ece.bootstrap_counts",
         "calibdash.display.reliability.reliability_table", "calibdash.display.reliability.continuous_reliability_curve",
         "calibdash.display.views.top_label_view", "calibdash.clinical.validation.analyse_sample", "calibdash.io.loading.load_predictions",
         "calibdash_app.downloads.download_name"]


def _decorated():
    return {name: obj for name, obj in public_objects().items() if getattr(obj, "__deprecated_parameters__", None)}


def test_every_renamed_parameter_has_a_case_here():
    assert set(_cases()) == set(CASES)
    assert set(_decorated()) == set(CASES) | RENAMING_ONLY


@pytest.mark.parametrize("name", CASES)
def test_a_retired_name_warns_and_gives_the_same_result(name):
    for fn, args, old, new, view in _cases()[name]:
        view = view or (lambda r: r)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # the new names warn of nothing
            expected = view(fn(*args, **new))
        retired = next(k for k in old if k in RETIRED)
        with pytest.warns(DeprecationWarning, match=f"'{retired}' is deprecated.*use '{RETIRED[retired]}'"):
            got = view(fn(*args, **old))
        _same(got, expected)
        with pytest.raises(TypeError, match="got both"):
            fn(*args, **old, **{RETIRED[retired]: new[RETIRED[retired]]})


@pytest.mark.parametrize("name", sorted(RENAMING_ONLY))
def test_the_other_renamed_functions_show_the_new_name(name):
    fn = _decorated()[name]
    params = inspect.signature(fn).parameters
    for old, new in fn.__deprecated_parameters__.items():
        assert RETIRED[old] == new and new in params and old not in params


def test_the_shim_passes_the_new_name_on_and_refuses_both():
    seen = {}

    @renamed_parameters(n_boot="n_resamples")
    def f(x, *, n_resamples=1):
        seen.update(x=x, n_resamples=n_resamples)

    with pytest.warns(DeprecationWarning, match="f: 'n_boot' is deprecated.*use 'n_resamples'"):
        f(1, n_boot=5)
    assert seen == {"x": 1, "n_resamples": 5}
    assert list(inspect.signature(f).parameters) == ["x", "n_resamples"] and f.__name__ == "f"
    with pytest.raises(TypeError, match="got both 'n_boot' and its new name 'n_resamples'"):
        f(1, n_boot=5, n_resamples=5)


def test_the_estimates_read_value_with_a_warning():
    P, y = _data(n=200)
    est = cd.skce(P, y)
    var = cd.variational_error(P, y)
    top = cd.variational_top_label(P, y)
    for obj in (est, var, top):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            estimate = obj.estimate
        with pytest.warns(DeprecationWarning, match=r"\.value is deprecated.*use \.estimate"):
            assert obj.value == estimate
        assert "value" not in {f.name for f in dataclasses.fields(obj)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.value = 0.0


def test_binning_words_map_to_strategy_words():
    P, y = _data()
    with pytest.warns(DeprecationWarning, match=r"binning='mass' is strategy='quantile'"):
        assert cd.metrics.ece.ece(P, y, binning="mass") == cd.metrics.ece.ece(P, y, strategy="quantile")


def test_the_retired_ece_constants_read_as_before_with_a_warning():
    """BINNINGS and an ECE estimator's 'binning' key were public: code that read them gets
    the old words (not the new ones under the old name, a silent change) and a warning."""
    from calibdash.metrics import ece

    with pytest.warns(DeprecationWarning, match=r"BINNINGS is deprecated.*use STRATEGIES"):
        assert ece.BINNINGS == ("width", "mass")
    for name, old in (("ece-15-bins", "width"), ("ece-mass-sqrt", "mass"), ("ece-mass-convex", "mass")):
        spec = ece.ECE_ESTIMATORS[name]
        with pytest.warns(DeprecationWarning, match=r"'binning' is deprecated.*read 'strategy'"):
            assert spec["binning"] == old
        assert dict(spec) == json.loads(json.dumps(spec)) and "binning" not in spec
    with pytest.raises(KeyError):
        ece.ECE_ESTIMATORS["ece-kde"]["binning"]  # a KDE estimator had no binning before either
    with pytest.raises(AttributeError, match="has no attribute 'BINS'"):
        ece.BINS  # noqa: B018 -- only the retired names are answered


def test_a_misnamed_renaming_is_refused_when_decorating():
    with pytest.raises(TypeError, match="no parameter 'n_resamples'"):
        renamed_parameters(n_boot="n_resamples")(lambda *, n_bootstrap=1: 0)


# -- result files written before the renaming ------------------------------------------------
DATA = Path(__file__).parent / "evaluation" / "data"


def test_a_result_file_of_the_previous_release_loads_with_the_same_numbers():
    import pandas as pd

    from calibdash.evaluation.evaluations import Evaluations

    text = (DATA / "result_v0_vocabulary.json").read_text()
    assert '"group_columns": [' in text  # written before the renaming (kept as it was)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # loading an old file is not the user's doing
        ev = Evaluations.from_json(text)
    ((name, notion, res),) = ev.results()
    assert res.config["input"]["groups"] == ["site"] and "group_columns" not in res.config["input"]
    stored = next(iter(json.loads(text)["models"].values()))[notion]
    expected = pd.DataFrame(stored["summary"]["data"], columns=stored["summary"]["columns"])
    assert res.summary["estimate"].tolist() == expected["estimate"].tolist()
    assert res.summary["estimate_se"].tolist() == expected["estimate_se"].tolist()
    # and it is written back in the new vocabulary
    again = json.loads(ev.to_json())
    assert '"group_columns"' not in json.dumps(again) and '"groups": ["site"]' in json.dumps(again)


def test_the_previous_release_result_file_reruns_to_the_same_numbers(tmp_path):
    # the rerun reads the loader options recorded under their old name
    from calibdash.cli import main

    rec = json.loads((DATA / "result_v0_vocabulary.json").read_text())
    for notions in rec["models"].values():
        for res in notions.values():
            res["config"]["input"]["predictions"] = str(DATA / "result_v0_vocabulary_preds.csv")
    old = tmp_path / "result.json"
    old.write_text(json.dumps(rec))
    # exit status 0: every number the same to rounding (OpenBLAS's Haswell kernels move one bins
    # risk by 1 ulp from the recording machine's)
    assert main(["rerun", str(old), "--use-recorded-paths", "--quiet"]) == 0
