"""The clinical validation metrics against reference values computed in R.

The data sets are tests/clinical/data/*.csv (written by make_data.py, which documents them).
The numbers below are the output of

    Rscript tests/clinical/reference.R

run from the repository root, pasted here so that the suite does not need R. Rerun both
scripts and paste again after changing the data.

What the numbers are (see reference.R):
- Brier, scaled Brier, O:E: direct formulas (val.prob's Brier is the same number);
- calibration-in-the-large: glm(y ~ 1, offset = qlogis(p), binomial); calibration slope:
  glm(y ~ qlogis(p), binomial); their intervals: confint(), the profile likelihood, which R
  4.2 takes from MASS (it interpolates the profile with a spline: within 3e-5 of the exact
  root, found with uniroot and kept under "ci exact");
- Spiegelhalter z and its two-sided p-value: rms::val.prob's S:z and S:p;
- AUROC and its DeLong interval: pROC::ci.auc(roc(y, p, direction = "<", levels = c(0, 1)),
  method = "delong"). val.prob's "C (ROC)" is not used: rms::lrm.fit bins the predicted
  probabilities before counting concordant pairs, so without ties it is up to 6e-5 off the
  exact Mann-Whitney value;
- ICI, E50, E90 (quantile type 7), Emax: |loess(y ~ p) fitted at p - p| with R's loess
  defaults (span 0.75, degree 2, gaussian, surface "interpolate"); "loess_grid": the same fit
  predicted at "loess_grid_x" = seq(min(p), max(p), length.out = 11);
- HETEROGENEITY: likelihood-ratio tests (anova(..., test = "LRT")) on overconfident_1000.csv
  split by rows, intercept: glm(y ~ 1, offset = qlogis(p)) against glm(y ~ g, offset =
  qlogis(p)); slope: glm(y ~ g + qlogis(p)) against glm(y ~ g * qlogis(p)).

Tolerances (pytest.approx passes when either the relative or the absolute bound holds):
- Brier, scaled Brier, AUROC and the DeLong interval ends (numbers of order 0.1 to 1):
  absolute 1e-6;
- O:E, calibration-in-the-large, calibration slope, Spiegelhalter z, LR statistics: relative
  1e-6, with an absolute floor of 1e-6 for estimates near 0;
- p-values (Spiegelhalter and LR; one is 1e-17): relative 1e-6, absolute floor 1e-12;
- ICI, E50, E90, Emax and the loess grid: absolute 1e-4;
- profile-likelihood interval ends (calibration-in-the-large and slope): absolute 1e-3.
"""

import csv
import functools
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent / "data"

# R version 4.2.2 Patched (2022-11-10 r83330); rms 6.5.0, Hmisc 4.8.0, pROC 1.18.0, MASS 7.3.58.2
# profile intervals by MASS::confint.glm (MASS 7.3.58.2, via stats:::confint.glm)
# R warnings (confint, loess): none
# largest differences between ways of computing the same number in R:
#   calibrated_500: val.prob - direct: Brier 0, C (ROC) - pROC auc 4.2e-05, Slope - glm slope 1.5e-09;
#     glm default - tight epsilon: slope 0, citl 0; confint() - exact root: citl 2.1e-06, slope 6e-06
#   overconfident_1000: val.prob - direct: Brier 0, C (ROC) - pROC auc 2.8e-05, Slope - glm slope 3.8e-10;
#     glm default - tight epsilon: slope 7.3e-09, citl 0; confint() - exact root: citl 1.5e-07, slope 3e-06
#   underestimated_rare_300: val.prob - direct: Brier 0, C (ROC) - pROC auc 6.4e-05, Slope - glm slope 3.3e-12;
#     glm default - tight epsilon: slope 5.6e-14, citl 3.5e-12; confint() - exact root: citl 3.4e-06, slope 2.9e-05
#   ties_400: val.prob - direct: Brier 0, C (ROC) - pROC auc 0, Slope - glm slope 7.6e-13;
#     glm default - tight epsilon: slope 9.1e-14, citl 3.2e-11; confint() - exact root: citl 2.7e-06, slope 7.3e-06
REFERENCE = {
    "calibrated_500": {
        "n": 500, "events": 193,
        # rms::val.prob(p, y, pl=FALSE)
        "val.prob Brier": 0.20319908334159717,
        "val.prob C (ROC)": 0.73127035830618892,
        "val.prob Slope": 0.76537550436385837,
        "val.prob Intercept": -0.20446712634355099,  # intercept of the recalibration fit a + b logit(p), not calibration-in-the-large
        "val.prob S:z": 2.0282208231350962,
        "val.prob S:p": 0.042537715592206198,
        "val.prob Dxy": 0.46254071661237783,
        "val.prob Eavg (lowess)": 0.043196210351653774,  # val.prob smooths with lowess(iter=0), not loess
        # glm(y ~ 1, offset = qlogis(p), binomial) and glm(y ~ qlogis(p), binomial); confint() profile intervals
        "calibration-in-the-large": -0.15204520143744152,
        "calibration-in-the-large ci": [-0.35802145584287831, 0.051856750198211149],
        "calibration-in-the-large ci exact": [-0.35801939929580173, 0.0518579911305782],  # uniroot on the deviance
        "calibration slope": 0.76537550585523961,
        "calibration slope ci": [0.5854357332084742, 0.95666858067173399],
        "calibration slope ci exact": [0.5854299269044736, 0.95666255793452681],  # uniroot on the profile deviance
        # loess(y ~ p), predicted at p and on seq(min(p), max(p), length.out = 11)
        "ICI": 0.045983202154799833,
        "E50": 0.029476038549649669,
        "E90": 0.092714184589701723,
        "Emax": 0.14517823835425281,
        "loess_grid_x": [
            0.0065307315970172513, 0.097353641503293842, 0.18817655140957043, 0.27899946131584696,
            0.36982237122212358, 0.4606452811284002, 0.5514681910346767, 0.64229110094095332,
            0.73311401084722994, 0.82393692075350655, 0.91475983065978317,
        ],
        "loess_grid": [
            -0.0014685783998426355, 0.12032134136233899, 0.21649910056919067, 0.28898211325929701,
            0.34634069797420292, 0.40643974569905356, 0.48672151016732795, 0.5716862764078271,
            0.64968110362388165, 0.71473364814536089, 0.76958159230553036,
        ],
        # direct formulas; pROC::ci.auc(roc(y, p, direction = "<", levels = c(0, 1)), method = "delong")
        "O:E": 0.93208086819939251,
        "Brier": 0.20319908334159717,
        "scaled Brier": 0.14263437181820904,
        "AUROC": 0.73122816492548648,
        "AUROC ci": [0.68668264370769261, 0.77577368614328035],
    },
    "overconfident_1000": {
        "n": 1000, "events": 507,
        # rms::val.prob(p, y, pl=FALSE)
        "val.prob Brier": 0.21665983740980718,
        "val.prob C (ROC)": 0.7368124152333857,
        "val.prob Slope": 0.59042154131689517,
        "val.prob Intercept": 0.17868444276145826,  # intercept of the recalibration fit a + b logit(p), not calibration-in-the-large
        "val.prob S:z": 8.5469176224304917,
        "val.prob S:p": 1.2641935633953803e-17,
        "val.prob Dxy": 0.47362483046677151,
        "val.prob Eavg (lowess)": 0.081238195967838614,  # val.prob smooths with lowess(iter=0), not loess
        # glm(y ~ 1, offset = qlogis(p), binomial) and glm(y ~ qlogis(p), binomial); confint() profile intervals
        "calibration-in-the-large": 0.28849374252948218,
        "calibration-in-the-large ci": [0.13673554142536451, 0.44028177806714752],
        "calibration-in-the-large ci exact": [0.13673564597902271, 0.44028162535944332],  # uniroot on the deviance
        "calibration slope": 0.59042154169280869,
        "calibration slope ci": [0.49594280415045944, 0.68923903332733261],
        "calibration slope ci exact": [0.49593993113117879, 0.68923600362344528],  # uniroot on the profile deviance
        # loess(y ~ p), predicted at p and on seq(min(p), max(p), length.out = 11)
        "ICI": 0.083828492574482813,
        "E50": 0.060651619274921575,
        "E90": 0.14717912621413984,
        "Emax": 0.14840522535044692,
        "loess_grid_x": [
            0.0067901898943125878, 0.10521251137266371, 0.20363483285101486, 0.30205715432936597,
            0.40047947580771709, 0.4989017972860682, 0.59732411876441938, 0.69574644024277044,
            0.79416876172112161, 0.89259108319947278, 0.99101340467782384,
        ],
        "loess_grid": [
            0.14677096531387113, 0.25360777365930331, 0.34292899525531179, 0.4159720525591854,
            0.47186253747092055, 0.52165124530784857, 0.57754649793504309, 0.64673373230878572,
            0.73388466756423298, 0.83750772880130864, 0.95824069973803772,
        ],
        # direct formulas; pROC::ci.auc(roc(y, p, direction = "<", levels = c(0, 1)), method = "delong")
        "O:E": 1.1046522030308827,
        "Brier": 0.21665983740980718,
        "scaled Brier": 0.13319075574889805,
        "AUROC": 0.73678440974430981,
        "AUROC ci": [0.70633650151423377, 0.76723231797438585],
    },
    "underestimated_rare_300": {
        "n": 300, "events": 29,
        # rms::val.prob(p, y, pl=FALSE)
        "val.prob Brier": 0.081389066421992354,
        "val.prob C (ROC)": 0.74914111210077616,
        "val.prob Slope": 1.1936078147953684,
        "val.prob Intercept": 1.2092184156534809,  # intercept of the recalibration fit a + b logit(p), not calibration-in-the-large
        "val.prob S:z": 3.2668843110260677,
        "val.prob S:p": 0.0010873810652715513,
        "val.prob Dxy": 0.49828222420155238,
        "val.prob Eavg (lowess)": 0.044468483397256529,  # val.prob smooths with lowess(iter=0), not loess
        # glm(y ~ 1, offset = qlogis(p), binomial) and glm(y ~ qlogis(p), binomial); confint() profile intervals
        "calibration-in-the-large": 0.69795504377490369,
        "calibration-in-the-large ci": [0.27924896142887756, 1.0791637454231382],
        "calibration-in-the-large ci exact": [0.27925168912183645, 1.0791671826582632],  # uniroot on the deviance
        "calibration slope": 1.1936078147986779,
        "calibration slope ci": [0.70869774145811137, 1.7352172832759534],
        "calibration slope ci exact": [0.70869372366377303, 1.73518858844115],  # uniroot on the profile deviance
        # loess(y ~ p), predicted at p and on seq(min(p), max(p), length.out = 11)
        "ICI": 0.041329851260870389,
        "E50": 0.035181992552185792,
        "E90": 0.075290756457422434,
        "Emax": 0.41305572208086727,
        "loess_grid_x": [
            0.0014928545743006117, 0.047707007370886415, 0.09392116016747222, 0.14013531296405804,
            0.18634946576064385, 0.23256361855722965, 0.27877777135381543, 0.32499192415040123,
            0.37120607694698704, 0.41742022974357285, 0.46363438254015865,
        ],
        "loess_grid": [
            -0.0032909897446625953, 0.090716601595172586, 0.15380858312497078, 0.25078681772510047,
            0.34538527834185256, 0.43820113109868791, 0.52926719964237545, 0.61861630761968411,
            0.70628127867738288, 0.79229493646224047, 0.87669010462102592,
        ],
        # direct formulas; pROC::ci.auc(roc(y, p, direction = "<", levels = c(0, 1)), method = "delong")
        "O:E": 1.8317177124329307,
        "Brier": 0.081389066421992354,
        "scaled Brier": 0.067945542947027371,
        "AUROC": 0.74907749077490771,
        "AUROC ci": [0.65278137779581957, 0.84537360375399584],
    },
    "ties_400": {
        "n": 400, "events": 156,
        # rms::val.prob(p, y, pl=FALSE)
        "val.prob Brier": 0.22394575,
        "val.prob C (ROC)": 0.67160571668768387,
        "val.prob Slope": 0.59634806379774496,
        "val.prob Intercept": -0.2551010879497958,  # intercept of the recalibration fit a + b logit(p), not calibration-in-the-large
        "val.prob S:z": 2.9934074284613006,
        "val.prob S:p": 0.0027588118684776139,
        "val.prob Dxy": 0.3432114333753678,
        "val.prob Eavg (lowess)": 0.069162317230588355,  # val.prob smooths with lowess(iter=0), not loess
        # glm(y ~ 1, offset = qlogis(p), binomial) and glm(y ~ qlogis(p), binomial); confint() profile intervals
        "calibration-in-the-large": -0.15885668240124418,
        "calibration-in-the-large ci": [-0.38282544320064038, 0.062454419579624221],
        "calibration-in-the-large ci exact": [-0.38282271069635976, 0.062455915544730976],  # uniroot on the deviance
        "calibration slope": 0.59634806379850391,
        "calibration slope ci": [0.3884128062890837, 0.81643754811699742],
        "calibration slope ci exact": [0.38840661039427615, 0.81643024851453472],  # uniroot on the profile deviance
        # loess(y ~ p), predicted at p and on seq(min(p), max(p), length.out = 11)
        "ICI": 0.079072657101103769,
        "E50": 0.072781220509181635,
        "E90": 0.10282381793540293,
        "Emax": 0.33626120659732672,
        "loess_grid_x": [
            0.02, 0.114, 0.20799999999999999, 0.30200000000000005,
            0.39600000000000002, 0.48999999999999999, 0.58400000000000007, 0.67800000000000005,
            0.77200000000000002, 0.86599999999999999, 0.95999999999999996,
        ],
        "loess_grid": [
            0.080965941764024524, 0.18875270805728156, 0.27148528611772249, 0.33730447826655113,
            0.31803532683865832, 0.39178436865435518, 0.51427116675453666, 0.59504786691230549,
            0.63708291514568849, 0.64733241293247346, 0.62373879340267324,
        ],
        # direct formulas; pROC::ci.auc(roc(y, p, direction = "<", levels = c(0, 1)), method = "delong")
        "O:E": 0.92598088680477242,
        "Brier": 0.22394575,
        "scaled Brier": 0.058655947877259362,
        "AUROC": 0.67160571668768387,
        "AUROC ci": [0.6173888876783421, 0.72582254569702565],
    },
}

# overconfident_1000.csv split by rows: 2 groups = rows 1-500 A, 501-1000 B;
# 3 groups = rows 1-300 A, 301-700 B, 701-1000 C
HETEROGENEITY = {
    ("overconfident_1000", "2 groups", "intercept"): {"statistic": 0.26724773757973708, "df": 1, "pvalue": 0.60518401710984848},
    ("overconfident_1000", "2 groups", "slope"): {"statistic": 0.50901255091980602, "df": 1, "pvalue": 0.47556662792875282},
    ("overconfident_1000", "3 groups", "intercept"): {"statistic": 2.1257615750839705, "df": 2, "pvalue": 0.34545918097577105},
    ("overconfident_1000", "3 groups", "slope"): {"statistic": 0.36701951480654316, "df": 2, "pvalue": 0.83234375418460205},
}

ABS_1E6 = {"rel": 0.0, "abs": 1e-6}
REL_1E6 = {"rel": 1e-6, "abs": 1e-6}
PVALUE = {"rel": 1e-6, "abs": 1e-12}
LOESS = {"rel": 0.0, "abs": 1e-4}
PROFILE = {"rel": 0.0, "abs": 1e-3}

# (metric row, column of v.metrics, reference key, index into the reference or None, tolerance)
QUANTITIES = [
    ("Brier", "estimate", "Brier", None, ABS_1E6),
    ("scaled Brier", "estimate", "scaled Brier", None, ABS_1E6),
    ("O:E", "estimate", "O:E", None, REL_1E6),
    ("AUROC", "estimate", "AUROC", None, ABS_1E6),
    ("AUROC", "ci_low", "AUROC ci", 0, ABS_1E6),
    ("AUROC", "ci_high", "AUROC ci", 1, ABS_1E6),
    ("calibration-in-the-large", "estimate", "calibration-in-the-large", None, REL_1E6),
    ("calibration-in-the-large", "ci_low", "calibration-in-the-large ci", 0, PROFILE),
    ("calibration-in-the-large", "ci_high", "calibration-in-the-large ci", 1, PROFILE),
    ("calibration slope", "estimate", "calibration slope", None, REL_1E6),
    ("calibration slope", "ci_low", "calibration slope ci", 0, PROFILE),
    ("calibration slope", "ci_high", "calibration slope ci", 1, PROFILE),
    ("Spiegelhalter z", "estimate", "val.prob S:z", None, REL_1E6),
    ("Spiegelhalter z", "p_value", "val.prob S:p", None, PVALUE),
    ("ICI", "estimate", "ICI", None, LOESS),
    ("E50", "estimate", "E50", None, LOESS),
    ("E90", "estimate", "E90", None, LOESS),
    ("Emax", "estimate", "Emax", None, LOESS),
]


def _case_id(dataset, metric, column):
    return f"{dataset}-{metric}" if column == "estimate" else f"{dataset}-{metric} {column}"


CASES = [pytest.param(dataset, metric, column, key, index, tol, id=_case_id(dataset, metric, column))
         for dataset in REFERENCE for metric, column, key, index, tol in QUANTITIES]


def load(dataset):
    """p and y of one data set; float() parses the 17 digits to the same double as R."""
    with open(DATA / f"{dataset}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return np.array([float(r["p"]) for r in rows]), np.array([int(r["y"]) for r in rows])


@functools.cache
def metrics(dataset):
    import calibdash as cd

    p, y = load(dataset)
    return cd.validate_risk_model(p, y, n_resamples=0, random_state=0, calibration_error=False).metrics


def test_the_data_are_the_ones_r_read():
    for dataset, ref in REFERENCE.items():
        p, y = load(dataset)
        assert (len(y), int(y.sum())) == (ref["n"], ref["events"]), dataset
        assert np.all((p > 0) & (p < 1)) and set(np.unique(y)) <= {0, 1}
        assert np.mean((p - y) ** 2) == pytest.approx(ref["Brier"], rel=1e-12), dataset


@pytest.mark.parametrize(("dataset", "metric", "column", "key", "index", "tol"), CASES)
def test_matches_r(dataset, metric, column, key, index, tol):
    m = metrics(dataset)
    rows = m[m["group"].isna() & (m["metric"] == metric)]
    assert len(rows) == 1, f"{len(rows)} whole-data rows named {metric!r}"
    expected = REFERENCE[dataset][key] if index is None else REFERENCE[dataset][key][index]
    assert float(rows.iloc[0][column]) == pytest.approx(expected, **tol)


@pytest.mark.parametrize("dataset", list(REFERENCE))
def test_loess_grid_matches_r(dataset):
    from calibdash.clinical.loess import loess_fit

    p, y = load(dataset)
    ref = REFERENCE[dataset]
    fitted = np.asarray(loess_fit(p, y).predict(np.array(ref["loess_grid_x"])), dtype=float)
    np.testing.assert_allclose(fitted, ref["loess_grid"], rtol=0, atol=LOESS["abs"])


SPLITS = {
    "2 groups": np.repeat(np.array(["A", "B"]), [500, 500]),
    "3 groups": np.repeat(np.array(["A", "B", "C"]), [300, 400, 300]),
}


@pytest.mark.parametrize(("dataset", "split", "kind"), [pytest.param(*key, id="-".join(key)) for key in HETEROGENEITY])
def test_heterogeneity_matches_r(dataset, split, kind):
    from calibdash.clinical.logistic import heterogeneity_test

    p, y = load(dataset)
    ref = HETEROGENEITY[(dataset, split, kind)]
    result = heterogeneity_test(p, y, SPLITS[split], kind=kind)
    assert result.df == ref["df"]
    assert result.statistic == pytest.approx(ref["statistic"], **REL_1E6)
    assert result.pvalue == pytest.approx(ref["pvalue"], **PVALUE)
