"""What tests/test_pinned.py pins, with which settings: shared by the generator and the test.

``tests/pinned/generate.py`` writes ``compute()`` to ``numbers.json``; the test computes it
again and compares. Both call this module, so they cannot drift apart.

The calls go through the top-level API (``import calibdash as cd``) only, except the few
functions the report and the app use that are not re-exported: they are imported in
:func:`internals`, the one place to update when the package's modules move.

Everything is deterministic: run times (``seconds`` columns, ``config["seconds"]``), the
library versions and the report's time stamp are left out.
"""

from __future__ import annotations

import hashlib
import html.parser
import math
from types import SimpleNamespace

import numpy as np

import calibdash as cd
from tests import blas_kernels
from tests.shared_data import SHARED_DATA, load_npz


def internals():
    """Every import below ``calibdash``'s top level, in one place (update after a move)."""
    from calibdash.display.plots import curve_stats, tuned_estimators  # the report's risk curves
    from calibdash.display.reliability import (
        continuous_reliability_curve,
        per_class_tables,
        reliability_table,
        selected_recalibration,
        top_label,
    )

    return SimpleNamespace(curve_stats=curve_stats, tuned_estimators=tuned_estimators,
                           continuous_reliability_curve=continuous_reliability_curve, per_class_tables=per_class_tables,
                           reliability_table=reliability_table, selected_recalibration=selected_recalibration,
                           top_label=top_label)


# ----------------------------------------------------------------------------- settings
FILES = ("cifar10_lenet5", "cifar10_wrn16-4", "cifar100_wrn16-4")
NOTIONS = ("top-label", "canonical")
# Subsamples (the first rows) keep the test under a minute on two cores. Default estimators,
# grids and literature rows ("others"); seed 0, 20% holdout, 5 folds (the defaults).
# cifar10_wrn16-4 goes through cd.evaluate (once per notion), cifar100_wrn16-4 through
# cd.evaluate_notions, so that both entry points are pinned.
EVALUATIONS = {
    "cifar10_wrn16-4": dict(rows=3000, entry="evaluate"),
    "cifar100_wrn16-4": dict(rows=2000, entry="evaluate_notions"),
}
N_JOBS = 1
# cd.compare of two models of the same CIFAR-10 test images (same labels, same order).
COMPARE = dict(models=("cifar10_lenet5", "cifar10_wrn16-4"), rows=2000, notion="top-label")
# The report's reliability diagrams (cd.report's defaults, written out) and its per-class panels.
RELIABILITY = dict(n_bins=15, strategy="uniform", n_resamples=200)
MAX_CLASS_PANELS = 6
# The app's continuous reliability curve (its defaults: 200 grid points, 200 resamples).
CONTINUOUS = dict(grid=200, n_resamples=200)
# Recalibration maps of the selected estimator: every holdout row's column means, and the
# first rows (in increasing row order) in full.
RECAL_HEAD = 40
DIAGONAL_HEAD = 20

# The kernel ridges' Nystroem path at fold size: the subsamples above train on at most 2,400 rows
# a fold, where the factor of CIFAR-100 stops far short of its pivots (or the exact path serves),
# so a change of the pivots (UKKR's 1,000 -> 640) or of the factor's products moved no pinned
# number. The whole CIFAR-100 file trains on 6,400 rows a fold: 640 and 512 pivots.
NYSTROEM = dict(file="cifar100_wrn16-4", rows=10_000, notion="canonical", estimators=["kkkr", "ukkr"])

SECTIONS = ("loading", "evaluate/cifar10_wrn16-4", "evaluate/cifar100_wrn16-4", "reliability/cifar10_wrn16-4",
            "reliability/cifar100_wrn16-4", "compare", "report/cifar10_wrn16-4", "report/cifar100_wrn16-4",
            "report/compare", "nystroem/cifar100_wrn16-4")
# Left out everywhere: wall-clock times.
VOLATILE_COLUMNS = ("seconds",)


def data_missing():
    """Why the shared data cannot be used (None when it can)."""
    if not SHARED_DATA.is_dir():
        return f"the shared data folder {SHARED_DATA} is missing"
    missing = [name for name in FILES if not (SHARED_DATA / f"{name}.npz").exists()]
    return f"{', '.join(missing)} missing from {SHARED_DATA}" if missing else None


def predictions(name, rows):
    """The first ``rows`` rows of a shared file, loaded as the app loads arrays."""
    P, y = load_npz(name)
    return cd.load_predictions(P[:rows], labels=y[:rows], name=f"{name} (first {rows:,} rows)")


# ----------------------------------------------------------------------------- plain values
def plain(value):
    """JSON-ready value: NaN -> None, +-inf -> "inf"/"-inf", numpy scalars and arrays -> Python."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if value is None or isinstance(value, str):
        return value
    return str(value)


def frame(df, drop=VOLATILE_COLUMNS):
    """A DataFrame column by column: {"columns", "dtypes", "data": {column: values}}."""
    df = df.drop(columns=[c for c in drop if c in df.columns]).reset_index(drop=True)
    return {"columns": [str(c) for c in df.columns], "dtypes": [str(t) for t in df.dtypes],
            "data": {str(c): plain(df[c].tolist()) for c in df.columns}}


def digest(indices):
    a = np.asarray(indices, dtype=np.int64)
    return {"n": int(a.size), "sha256": hashlib.sha256(a.tobytes()).hexdigest(), "head": plain(a[:5])}


# ----------------------------------------------------------------------------- evaluations
def evaluate_model(name):
    spec = EVALUATIONS[name]
    pred = predictions(name, spec["rows"])
    if spec["entry"] == "evaluate":
        results = {notion: cd.evaluate(pred, notion=notion, n_jobs=N_JOBS) for notion in NOTIONS}
    else:
        results = cd.evaluate_notions(pred, notions=NOTIONS, n_jobs=N_JOBS)
    return pred, results


def result_numbers(res):
    """Everything deterministic an EvaluationResult holds, and the risk curves the report draws."""
    cfg = {k: v for k, v in res.config.items() if k not in ("seconds", "versions")}
    best = res.best["estimator"]
    low, high = res.confidence_interval(level=0.9)
    tuned = internals().tuned_estimators(res)
    return plain({
        "summary": frame(res.summary),
        "others": frame(res.others),
        "folds": frame(res.folds),
        "curves": frame(res.curves),
        "chosen": {row["estimator"]: row["params"] for _, row in res.summary.iterrows()},
        "best": best,
        "tied": res.tied,
        "reference": res.reference,
        "summary_with_reference": frame(res.summary_with_reference()),
        "best_interval_90": [low, high],
        "warnings": res.warnings,
        "config": cfg,
        "split": {"test": digest(res.split["test"]), "folds": [digest(v) for v in res.split["folds"]],
                  "holdout_rows": digest(res.holdout_rows)},
        # each estimator's holdout diagonal h(z_i, z_i), mean over the fold models, first rows of the split
        "diagonals_head": {k: v.mean(axis=0)[:DIAGONAL_HEAD] for k, v in res.diagonals.items()},
        "risk_curves": {est: frame(internals().curve_stats(res, est)) for est in tuned},
    })


def reliability_numbers(pred, results):
    """The report's reliability diagrams, the selected recalibration maps and the app's continuous curve."""
    rl = internals()
    out = {}
    table = rl.reliability_table(*rl.top_label(pred.probs, pred.labels), **RELIABILITY)
    out["top_label_table"] = {"table": frame(table), "ece": table.attrs["ece"]}
    order = np.argsort(-np.bincount(pred.labels, minlength=pred.d), kind="stable")
    classes = sorted(int(k) for k in order[: min(pred.d, MAX_CLASS_PANELS)])
    out["classes"] = classes
    tables = rl.per_class_tables(pred.probs, pred.labels, classes, **RELIABILITY)
    out["per_class_tables"] = {str(k): {"table": frame(t), "ece": t.attrs["ece"]} for k, t in tables.items()}
    for notion, res in results.items():
        idx = res.holdout_rows
        name, G = rl.selected_recalibration(res, pred.probs[idx])
        cols = [0] if G.shape[1] == 1 else classes
        out[f"recalibration/{notion}"] = {"estimator": name, "shape": list(G.shape), "column_means": G.mean(axis=0),
                                          "head": G[:RECAL_HEAD][:, cols]}
    curve = rl.continuous_reliability_curve(pred.probs, pred.labels, notion="top-label", **CONTINUOUS)
    out["continuous_top_label"] = {"curve": frame(curve), **{k: curve.attrs[k] for k in ("bandwidth", "support", "ece")}}
    curve = rl.continuous_reliability_curve(pred.probs, pred.labels, notion="classwise", class_index=classes[0], **CONTINUOUS)
    out["continuous_classwise"] = {"class_index": classes[0], "curve": frame(curve),
                                   **{k: curve.attrs[k] for k in ("bandwidth", "support", "ece")}}
    return plain(out)


def loading_numbers():
    """cd.load_predictions of every shared file, whole."""
    out = {}
    for name in FILES:
        p = cd.load_predictions(SHARED_DATA / f"{name}.npz")
        out[name] = plain({"shape": list(p.probs.shape), "kind": p.kind, "kind_detected": p.kind_detected,
                           "source_name": p.source_name, "class_names": list(p.class_names), "warnings": list(p.warnings),
                           "notes": list(p.notes), "sha256": p.sha256, "accuracy": p.accuracy,
                           "mean_confidence": p.mean_confidence, "labels": digest(p.labels),
                           "probs_column_sums": p.probs.sum(axis=0)})
    return out


def compare_models():
    preds = {name: predictions(name, COMPARE["rows"]) for name in COMPARE["models"]}
    cmp = cd.compare(preds, notion=COMPARE["notion"], n_jobs=N_JOBS)
    return preds, cmp


def compare_numbers(cmp):
    return plain({
        "estimator": cmp.estimator,
        "models": frame(cmp.models),
        "pairs": frame(cmp.pairs),
        "estimator_risks": frame(cmp.estimator_risks.reset_index()),
        "config": cmp.config,
        "holdout": digest(cmp.holdout),
        "diagonals_head": {k: v[:DIAGONAL_HEAD] for k, v in cmp.diagonals.items()},
        "diagonals_mean": {k: float(np.mean(v)) for k, v in cmp.diagonals.items()},
        "summaries": {k: frame(r.summary) for k, r in cmp.results.items()},
    })


# ----------------------------------------------------------------------------- the report
class _ReportParser(html.parser.HTMLParser):
    """The report's headings, tables, verdicts and figure captions, in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.items = []
        self._skip = 0  # inside <script> or <style>
        self._text = None  # text being collected for the current heading, cell or caption
        self._table = None
        self._in_head = False
        self._verdict_depth = 0  # nesting depth of <div> inside a verdict
        self._verdict = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "div" and self._verdict is not None:
            self._verdict_depth += 1
        elif tag == "div" and "verdict" in (attrs.get("class") or "").split():
            self._verdict, self._verdict_depth = [], 1
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "th", "td"):
            self._text = []
        elif tag in ("p", "li") and self._verdict is not None:
            self._text = []
        elif tag == "table":
            self._table = {"header": [], "rows": []}
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._table is not None and not self._in_head:
            self._table["rows"].append([])
        elif tag == "figure":
            self.items.append({"figure": attrs.get("data-figure")})

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag == "div" and self._verdict is not None:
            self._verdict_depth -= 1
            if not self._verdict_depth:
                self.items.append({"verdict": self._verdict})
                self._verdict = None
        elif tag in ("th", "td") and self._table is not None and self._text is not None:
            text = "".join(self._text).strip()
            (self._table["header"] if self._in_head else self._table["rows"][-1]).append(text)
            self._text = None
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6", "figcaption") and self._text is not None:
            self.items.append({"heading" if tag != "figcaption" else "caption": "".join(self._text).strip()})
            self._text = None
        elif tag in ("p", "li") and self._verdict is not None and self._text is not None:
            self._verdict.append("".join(self._text).strip())
            self._text = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "table" and self._table is not None:
            self.items.append({"table": self._table})
            self._table = None

    def handle_data(self, data):
        if not self._skip and self._text is not None:
            self._text.append(data)


def report_numbers(doc):
    """The report's tables, verdicts, headings and figure captions, without the volatile
    parts: the library-versions table and every "seconds" column."""
    parser = _ReportParser()
    parser.feed(doc)
    parser.close()
    out, after_versions = [], False
    for item in parser.items:
        if "table" in item:
            if after_versions:
                after_versions = False
                out.append({"table": "library versions: left out"})
                continue
            table = item["table"]
            keep = [i for i, h in enumerate(table["header"]) if h not in VOLATILE_COLUMNS]
            if table["header"]:
                table = {"header": [table["header"][i] for i in keep],
                         "rows": [[row[i] for i in keep] for row in table["rows"]]}
            item = {"table": table}
        after_versions = item.get("heading") == "Library versions" or (after_versions and "table" not in item)
        out.append(item)
    # the figure count, as written in the report's meta tag
    start = doc.index('name="calibdash-figures" content="') + len('name="calibdash-figures" content="')
    return {"items": out, "figures": int(doc[start:doc.index('"', start)])}


# ----------------------------------------------------------------------------- all of it
def nystroem_numbers():
    """The kernel ridges on the whole CIFAR-100 file, on the Nystroem path, with the pivots each
    fold model took."""
    spec = NYSTROEM
    res = cd.evaluate(predictions(spec["file"], spec["rows"]), notion=spec["notion"], estimators=spec["estimators"],
                      others=[], n_jobs=N_JOBS)
    pivots = {name: [m.bases_[0].centres.shape[0] for m in res.models[name].estimators] for name in spec["estimators"]}
    return dict(result_numbers(res), pivots=pivots)


def compute(progress=None):
    """Every pinned number, as a JSON-ready dict keyed by SECTIONS."""
    say = progress or (lambda message: None)
    out = {"loading": loading_numbers()}
    for name in EVALUATIONS:
        say(f"evaluating {name}")
        pred, results = evaluate_model(name)
        out[f"evaluate/{name}"] = {notion: result_numbers(res) for notion, res in results.items()}
        say(f"reliability of {name}")
        out[f"reliability/{name}"] = reliability_numbers(pred, results)
        say(f"report of {name}")
        out[f"report/{name}"] = report_numbers(cd.report(results, pred))
    say("comparing " + " and ".join(COMPARE["models"]))
    preds, cmp = compare_models()
    out["compare"] = compare_numbers(cmp)
    out["report/compare"] = report_numbers(cd.report(dict(cmp.results), preds))
    say("kernel ridges at fold size")
    out["nystroem/" + NYSTROEM["file"]] = nystroem_numbers()
    assert set(out) == set(SECTIONS), sorted(set(out) ^ set(SECTIONS))
    return {key: out[key] for key in SECTIONS}


# The numbers are computed in a child process on OpenBLAS's Haswell kernels (tests/blas_kernels.py):
# another family rounds the products differently, which the kernel ridges amplify to about
# 1e-6 relative, far beyond RTOL. The pins compare the code; test_cpu_kernels compares CPUs.
_COMPUTE = """
import json
from tests.pinned import cases
print(json.dumps(cases.compute(), allow_nan=False))
"""


def compute_on_pinned_kernels():
    """:func:`compute` in a child process on :data:`tests.blas_kernels.PINNED`'s kernels."""
    return blas_kernels.run_json(_COMPUTE, blas_kernels.PINNED)


# ----------------------------------------------------------------------------- comparison
RTOL, ATOL = 1e-9, 1e-12


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def differences(want, got, path="", limit=50, *, rtol=RTOL, atol=ATOL):
    """Where ``got`` differs from ``want`` (both JSON-ready): a list of "path: what" strings.

    Floats (and lists of numbers holding a float) are compared with
    ``numpy.testing.assert_allclose(rtol=rtol, atol=atol)`` (by default 1e-9 and 1e-12), None
    (NaN) only with None; everything else (strings, bools, ints, list lengths, dict keys) must
    be equal.
    """
    out = []

    def walk(a, b, where):
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            if list(a) != list(b):
                missing, extra = [k for k in a if k not in b], [k for k in b if k not in a]
                out.append(f"{where}: keys differ (missing {missing}, new {extra})" if missing or extra
                           else f"{where}: keys in another order ({list(a)} != {list(b)})")
            for k in a:
                if k in b:
                    walk(a[k], b[k], f"{where}/{k}")
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                out.append(f"{where}: length {len(b)} != pinned {len(a)}")
                return
            numeric = lambda xs: all(_is_number(x) or x is None for x in xs)  # noqa: E731
            if a and numeric(a) and numeric(b) and any(isinstance(x, float) for x in a + b):
                if [x is None for x in a] != [x is None for x in b]:
                    nan = [i for i, (x, y) in enumerate(zip(a, b)) if (x is None) != (y is None)]
                    out.append(f"{where}: NaN at other positions (first at index {nan[0]}: pinned {a[nan[0]]!r}, now {b[nan[0]]!r})")
                    return
                aa = np.array([np.nan if x is None else x for x in a], dtype=float)
                bb = np.array([np.nan if x is None else x for x in b], dtype=float)
                try:
                    np.testing.assert_allclose(bb, aa, rtol=rtol, atol=atol, err_msg=where)
                except AssertionError as e:
                    bad = np.flatnonzero(~np.isclose(bb, aa, rtol=rtol, atol=atol, equal_nan=True))
                    i = int(bad[0]) if bad.size else 0
                    out.append(f"{where}: {bad.size} of {aa.size} values differ; first at index {i}: pinned "
                               f"{float(aa[i])!r}, now {float(bb[i])!r}\n{str(e).strip()}")
            else:
                for i, (x, y) in enumerate(zip(a, b)):
                    walk(x, y, f"{where}[{i}]")
        elif isinstance(a, float) or isinstance(b, float):
            if not (_is_number(a) and _is_number(b)):
                out.append(f"{where}: pinned {a!r}, now {b!r}")
                return
            try:
                np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=where)
            except AssertionError:
                out.append(f"{where}: pinned {a!r}, now {b!r}")
        elif a != b or type(a) is not type(b):
            out.append(f"{where}: pinned {a!r}, now {b!r}")

    walk(want, got, path)
    return out
