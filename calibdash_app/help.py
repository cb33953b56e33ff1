"""The dashboard's help texts, one place for each: the tooltips of the pages' controls and
column headers, keyed by what they explain."""

from calibdash.clinical import MAX_GROUPS
from calibdash.display.reliability import FIFTEEN_BIN_HELP
from calibdash.estimators.registry import REGISTRY

# The Evaluate, Results and Reliability pages (and the notion and seed boxes of every page).
HELP = {
    "notion": "What 'calibrated' means. Top-label: when the model says 80% for its predicted class, "
    "is it right 80% of the time? Canonical: is the whole probability vector right (every class at once)? "
    "Classwise: is each class's probability right, class by class?",
    "estimators": "Ways of estimating the calibration error; the risk decides which one to trust.\n\n"
    + "\n".join(f"- **{name}**: {entry.summary}" for name, entry in REGISTRY.items()),
    "risk": "The risk (Gruber & Bach, Eq. 20) scores an estimator by how well it predicts calibration "
    "gaps on data it did not see. Lower is better; it is how the app chooses between estimators and settings.",
    "paired": "The folds are shared by every estimator, so two estimators' risks are compared fold by fold: 'risk above "
    "best' is the mean over folds of the difference to the best estimator's risk, with its standard error. An "
    "estimator that is not measurably worse (one-sided paired t test at 5%) is 'tied' with the best: the data cannot "
    "tell them apart. The row 'h = 0' is the estimate 'perfectly calibrated': if it is tied, the data do not show "
    "any miscalibration.",
    "interval": "The 95% interval of each estimate covers both sources of chance: which rows were held out, and "
    "which rows fitted the fold models. It cannot cover an estimator's bias (smoothing estimators shrink small "
    "errors towards 0). The verdict's interval joins the intervals of all estimators tied with the best.",
    "others": "Estimators from the literature, computed on the same holdout rows and shown beside the ranked ones, "
    "grouped by what they estimate: the L1 ECE estimators of Posocco & Bonnefoy (the familiar 15-bin ECE among "
    "them), the squared kernel calibration error (SKCE) with its test of 'the model is calibrated', and the "
    "variational estimators of Berta et al. (a lower bound). The risk cannot rank them: they are not of its form.",
    "fifteen": FIFTEEN_BIN_HELP,
    "sqrt_risk": "The square root of the validation risk, times 100, as in the paper's tables: a score that ranks the "
    "estimators (lower is better), on the scale of the risk, not an estimate of the calibration error (that is the "
    "column 'calibration error', in percentage points).",
    "summary_csv": "One row per estimator, every column of the result's summary at full precision; estimates and "
    "intervals in fractions as in the Python API (0.0303 is 3.03 percentage points).",
    "test_size": "Fraction of rows held out and used only for the final estimate, never for choosing.",
    "n_folds": "Cross-validation folds on the remaining rows, used to compute the risk of every setting.",
    "seed": "Random seed of the split, so a run can be repeated exactly.",
    "bins": "Number of bins of the reliability diagram (display only; it does not change the estimates).",
    "strategy": "Equal width: bins of the same width in confidence. Equal mass: bins holding the same "
    "number of predictions (better where predictions are crowded, e.g. near 100%).",
    "bootstrap": "Resamples used for the shaded band: the range where the observed frequency of a bin "
    "would fall 90% of the time if the data were drawn again. 0 turns the band off.",
}

# The Data page's upload and column mapping.
HELP_SOURCE = {
    "kind": "'auto' reads non-negative rows summing to 1 as probabilities, rows summing to 100 (or one column in "
    "0-100 with values above 1) as percentages, and numbers with negative values as logits (turned into "
    "probabilities by the softmax). When the numbers fit none of these with confidence, the app asks you to "
    "choose here instead of guessing.",
    "label_column": "The column holding the true class of each row. Guessed from its name (label, y, target, "
    "class, outcome, diagnosis, truth, ...) or as the only column of text.",
    "prob_columns": "The columns of predicted probabilities (or percentages, logits), one per class in class order. "
    "A single column is the probability of the positive class of a two-class problem. Guessed from names such as "
    "p_malignant, prob_malignant, malignant_prob or P(malignant).",
    "positive": "For a single probability column: the label it is the probability of (the positive class); the "
    "other label is the negative class. Guessed from the column's name (p_malignant: malignant).",
    "class_names": "One name per class, in column order, separated by commas; labels given as names are matched "
    "to them. A table's header names its classes.",
    "group_columns": "Columns kept beside the predictions as grouping variables (e.g. the hospital site), for "
    "analyses by subgroup. They do not change any number.",
    "typed_columns": "The columns of predicted probabilities (or percentages, logits), one per class in class "
    "order: column names and ranges first:last of neighbouring columns, separated by commas (p0:p999 is every "
    "column from p0 to p999). The table has too many columns to list them here.",
}

# What a CSV download holds: data for programs, the API's numbers, not the tables' points.
IN_FRACTIONS = "at full precision, in fractions as in the Python API (0.0303 is 3.03 percentage points)"

# The Compare and Learn pages.
HELP_COMPARE = {
    "models_csv": f"One row per model, {IN_FRACTIONS}.",
    "pairs_csv": f"One row per pair of models, {IN_FRACTIONS}: the difference of the squared errors (which the "
    "p-value tests) with its interval, the p-value and each model's error.",
    "models": "The prediction sets to compare. They must be predictions for the same rows (the same patients, "
    "images...) in the same order, with the same labels.",
    "estimator": "One estimator measures every model, because estimators differ in their bias. 'auto' takes the one "
    "with the lowest validation risk summed over the models.",
    "difference": "Difference of the calibration errors (model a minus model b) in percentage points, estimated on the "
    "same held-out rows. Below 0: model a is better calibrated. The interval and p-value cover both which rows were "
    "held out (the variance of the paired row differences) and which rows fitted the fold models (a jackknife over "
    "them). The p-value tests equal squared errors, which are equal errors; the interval takes that test's variance to "
    "the errors' scale (the delta method), and is left blank when an error is within two standard errors of 0, where "
    "the square root is not smooth.",
    "p_value": "Probability of a difference at least this large if both models were equally well calibrated. "
    "Below 0.05 is the usual threshold for 'the difference is real'.",
    "brier": "Brier score: mean squared distance between the probability vector and the true class (0 is perfect). "
    "It mixes accuracy and calibration; the calibration error isolates calibration.",
    "accuracy": "How often the most probable class is the true one. A model can be accurate and badly calibrated.",
    "scenario": "A simulated classifier whose true calibration error is known exactly, so every estimator can be "
    "checked against the truth.",
    "distortion": "The model is softmax(distortion x log P) of the true probabilities P: 1 is calibrated, below 1 "
    "under-confident, above 1 over-confident.",
    "slope": "The model is sigmoid(slope x x) while the truth is sigmoid(x): 1 is calibrated, above 1 over-confident, "
    "below 1 under-confident.",
    "strength": "The model adds a fixed bias to the logits, strength x (-1 ... 1) from the first class to the last: "
    "0 is calibrated; the model then favours the later classes, over-confident for them and under-confident for the "
    "others. Not a temperature scaling, so no estimator is built for it.",
    "pw_slope": "Below probability 0.2 the model's log-probabilities are those of the truth times this slope "
    "(lifted when below 1): 1 is calibrated; 0.7 leaves a small error of about 2 points.",
    "ns": "Sample sizes to simulate. Each size is drawn several times to show the spread of the estimates.",
    "repeats": "Independent draws per sample size: more draws show the bias and spread more precisely (and take longer).",
    "f1_n": "Rows per simulated data set in the Figure 1 experiment (the paper uses 500).",
    "f1_seeds": "Independent data sets (seeds) whose risks are averaged (the paper uses 100).",
}

# The Validate page.
HELP_VALIDATE = {
    "group": "The column whose values are the subgroups (e.g. the hospital site): every metric is computed per group, "
    "with forest plots and tests of heterogeneity. The Data page keeps a table's grouping columns (under **Grouping "
    f"columns**). Between 2 and {MAX_GROUPS} groups; groups with fewer than 10 events or non-events are listed but not "
    "judged.",
    "class": "The class whose predicted risk is validated against all the others (the event). For two classes, the "
    "positive class.",
    "resamples": "Bootstrap resamples for the intervals of O:E, ICI, E50, E90, the Brier scores, the curve's band and "
    "the decision curve (calibration-in-the-large and the slope have profile-likelihood intervals, AUROC DeLong's). "
    "More take longer; 0 skips those intervals.",
    "role": "**Subgroups of patients** (e.g. sex, age band, a diagnosis): the same patients' population split by a "
    "characteristic; every metric per group, forest plots and tests of heterogeneity; the whole data's intervals "
    "resample patients. **Centres** (hospitals, practices, countries): patients cluster within centres, which "
    "differ in case mix and care; the whole data's intervals come from a cluster bootstrap (resampling centres, "
    "not patients), and a random-effects meta-analysis pools the centres' O:E, calibration-in-the-large, slope "
    "and AUROC with a prediction interval: the range of a new centre's value (Debray et al. 2017, Riley et al. "
    "2021). Choose centres when the data come from several sites and you want to know how the model transports.",
    "thresholds": "The range of risk thresholds (the risk above which a patient would be treated) over which "
    "clinical usefulness is judged: the model is useful where the lower end of the interval of its net benefit "
    "over the better of treat-all and treat-none is above 0 over a stretch of thresholds. Choose the thresholds "
    "that are clinically sensible for the decision the risks inform: a wide range includes thresholds nobody would "
    "use and where few patients are.",
    "findings": "One sentence per subgroup or centre whose calibration is off (an interval that excludes the ideal "
    "value), with its numbers.",
    "net_benefit": "At each threshold in the range: the model's net benefit (true positives per patient, minus "
    "false positives weighted by the threshold's odds), treat-all's, the difference to the better of treat-all and "
    "treat-none with its 95% interval, and the net interventions avoided per 100 patients. The model is useful "
    "where the interval of the difference lies above 0.",
    "pooled": "One row per metric: the random-effects estimate over the centres (REML, Hartung-Knapp 95% interval), "
    "the 95% prediction interval (where a new centre's value would lie) and tau squared (the between-centre "
    "variance). A prediction interval much wider than the interval means the centres differ.",
    "pooled_forest": "Each centre's estimate and 95% interval, the pooled estimate (diamond) and the prediction "
    "interval of a new centre.",
    "recalibration": "The updates that would make the risks calibrated in these data: the intercept update (shift "
    "every risk on the logit scale: logit p' = a + logit p) and the logistic recalibration (logit p' = a + b logit p), "
    "with profile-likelihood intervals. The download applies them to every row.",
    "plan": "Riley et al. (2021): the rows a validation study needs so that the 95% intervals of O:E, the "
    "calibration slope, the C statistic and the net benefit at a threshold are no wider than the targets, from "
    "anticipated values alone (no data needed). The largest of the criteria is the minimum.",
    "seed": "Random seed of the bootstrap (and of the calibration error's split): equal seeds give equal numbers.",
    "cal_error": "Also estimate the risk-optimised calibration error (Gruber & Bach; calibdash's Evaluate run, canonical "
    "notion) on the whole data and in every judged group. It takes a few seconds per group. Off by default: the "
    "estimator it selects can change between groups, so the groups' numbers are not comparable.",
    "hierarchy": "Van Calster et al. (2019): mean calibration (do the risks match the event rate on average? O:E, "
    "calibration-in-the-large), weak calibration (are they too extreme or too modest? the slope), moderate calibration "
    "(does the observed frequency follow the risk? the flexible curve and its summaries ICI, E50, E90, Emax), beside "
    "discrimination (AUROC), overall accuracy (Brier) and clinical usefulness (net benefit). A level is a problem when "
    "its interval excludes the ideal value, uncertain when the interval is too wide to tell.",
    "curve": "The loess curve of the observed outcome on the predicted risk (span 0.75, degree 2, as R computes it) with "
    "its bootstrap band, as R's CalibrationCurves::val.prob.ci.2 draws it, and the observed event rate in tenths of "
    "predicted risk with exact intervals; on the diagonal, the risks are right. For a score with few distinct risks "
    "(a point score) loess has nothing to smooth: the observed event rate at each risk level, with its exact "
    "interval, is the curve. The axes are zoomed to the range of the risks. Below: how many events (up) and "
    "non-events (down) received each predicted risk.",
    "decision": "Net benefit (Vickers & Elkin 2006): true positives minus false positives weighted by the odds of the "
    "threshold, per patient, for treating those whose risk is above the threshold; against treating everyone and no "
    "one. The shaded range is the one set under Threshold range: the model is judged useful where the interval of "
    "its net benefit is above both over a stretch of thresholds in it.",
    "forest": "Each group's estimate and interval beside the value of a calibrated model (dashed); the panel titles give "
    "the likelihood-ratio test of heterogeneity between groups. Open markers: imprecise groups.",
    "heterogeneity": "Likelihood-ratio tests of 'calibration-in-the-large (or the slope) is the same in every judged "
    "group'. A small p-value means the groups differ.",
}
