# R reference values for tests/clinical/test_r_reference.py.
#
# Run from the repository root:  Rscript tests/clinical/reference.R
# It reads the CSV files of tests/clinical/data (written by make_data.py) and prints
# Python source (REFERENCE, HETEROGENEITY and a provenance comment) to paste into
# test_r_reference.py, so that the test suite needs no R. Numbers are printed with
# sprintf("%.17g"), enough digits to round-trip every double.
#
# Needs the packages rms (val.prob), pROC (DeLong interval) and MASS (profile-likelihood
# confint for glm before R 4.4; from R 4.4 stats does it itself).
suppressPackageStartupMessages({
  library(rms)
  library(pROC)
  library(MASS)
})

data_dir <- "tests/clinical/data"
datasets <- c("calibrated_500", "overconfident_1000", "underestimated_rare_300", "ties_400")
# the profile intervals are computed by confint(); confint.glm lives in stats from R 4.4.0,
# before that stats:::confint.glm hands over to MASS's
confint_source <- if (getRversion() >= "4.4.0") "stats::confint.glm" else
  sprintf("MASS::confint.glm (MASS %s, via stats:::confint.glm)", packageVersion("MASS"))
tight <- glm.control(epsilon = 1e-14, maxit = 100)

num <- function(x) {
  x <- unname(x)
  if (length(x) == 1) return(sprintf("%.17g", x))
  s <- sprintf("%.17g", x)
  if (length(x) <= 2) return(paste0("[", paste(s, collapse = ", "), "]"))
  # long lists four to a line (the test file keeps to 140 characters a line)
  rows <- split(s, ceiling(seq_along(s) / 4))
  paste0("[\n", paste0("            ", sapply(rows, paste, collapse = ", "), ",", collapse = "\n"), "\n        ]")
}

# the exact profile-likelihood interval by root finding on the deviance, to check how close
# confint()'s spline interpolation of the profile comes
exact_profile <- function(profile_dev, est, dev_min, level = 0.95) {
  crit <- qchisq(level, 1)
  f <- function(t) profile_dev(t) - dev_min - crit
  step <- 0.5
  lo <- est - step; while (f(lo) < 0) lo <- lo - step
  hi <- est + step; while (f(hi) < 0) hi <- hi + step
  c(uniroot(f, c(lo, est), tol = 1e-13)$root, uniroot(f, c(est, hi), tol = 1e-13)$root)
}

warnings_seen <- character()
note_warning <- function(w) {
  warnings_seen <<- c(warnings_seen, conditionMessage(w))
  invokeRestart("muffleWarning")
}

out <- c("REFERENCE = {")
checks <- character()
for (name in datasets) {
  d <- read.csv(file.path(data_dir, paste0(name, ".csv")))
  p <- d$p; y <- d$y; lp <- qlogis(p)
  stopifnot(all(p > 0 & p < 1), all(y %in% c(0, 1)))

  vp <- val.prob(p, y, pl = FALSE)

  # calibration-in-the-large: logit P(y = 1) = a + logit(p)
  fit <- glm(y ~ 1, offset = lp, family = binomial, control = tight)
  citl <- unname(coef(fit)[1])
  citl_ci <- withCallingHandlers(suppressMessages(confint(fit, level = 0.95)), warning = note_warning)
  citl_exact <- exact_profile(function(a) sum(binomial()$dev.resids(y, plogis(a + lp), 1)), citl, deviance(fit))

  # calibration slope: logit P(y = 1) = a + b logit(p)
  fit2 <- glm(y ~ lp, family = binomial, control = tight)
  slope <- unname(coef(fit2)["lp"])
  slope_ci <- withCallingHandlers(suppressMessages(confint(fit2, level = 0.95)), warning = note_warning)["lp", ]
  slope_exact <- exact_profile(function(b) deviance(glm(y ~ 1, offset = b * lp, family = binomial, control = tight)),
                               slope, deviance(fit2))
  # glm at its default convergence criterion, the fit the brief names
  slope_default <- unname(coef(glm(y ~ qlogis(p), family = binomial))[2])
  citl_default <- unname(coef(glm(y ~ 1, offset = qlogis(p), family = binomial))[1])

  # flexible calibration curve: loess with R's defaults (span 0.75, degree 2, gaussian, interpolate)
  fit3 <- withCallingHandlers(loess(y ~ p), warning = note_warning)
  pc <- withCallingHandlers(predict(fit3, newdata = p), warning = note_warning)
  dd <- abs(pc - p)
  grid <- seq(min(p), max(p), length.out = 11)
  grid_pred <- withCallingHandlers(predict(fit3, newdata = grid), warning = note_warning)
  stopifnot(!anyNA(pc), !anyNA(grid_pred))

  brier <- mean((p - y)^2)
  r <- roc(y, p, direction = "<", levels = c(0, 1), quiet = TRUE)
  auc_ci <- as.numeric(ci.auc(r, method = "delong", conf.level = 0.95))  # lower, auc, upper

  checks <- c(checks, sprintf(
    "#   %s: val.prob - direct: Brier %.2g, C (ROC) - pROC auc %.2g, Slope - glm slope %.2g;",
    name, abs(vp[["Brier"]] - brier), abs(vp[["C (ROC)"]] - auc_ci[2]), abs(vp[["Slope"]] - slope)), sprintf(
    "#     glm default - tight epsilon: slope %.2g, citl %.2g; confint() - exact root: citl %.2g, slope %.2g",
    abs(slope_default - slope), abs(citl_default - citl),
    max(abs(citl_ci - citl_exact)), max(abs(slope_ci - slope_exact))))

  out <- c(out, sprintf('    "%s": {', name),
    sprintf('        "n": %d, "events": %d,', length(y), sum(y)),
    "        # rms::val.prob(p, y, pl=FALSE)",
    sprintf('        "val.prob Brier": %s,', num(vp[["Brier"]])),
    sprintf('        "val.prob C (ROC)": %s,', num(vp[["C (ROC)"]])),
    sprintf('        "val.prob Slope": %s,', num(vp[["Slope"]])),
    sprintf('        "val.prob Intercept": %s,  # intercept of the recalibration fit a + b logit(p), not calibration-in-the-large', num(vp[["Intercept"]])),
    sprintf('        "val.prob S:z": %s,', num(vp[["S:z"]])),
    sprintf('        "val.prob S:p": %s,', num(vp[["S:p"]])),
    sprintf('        "val.prob Dxy": %s,', num(vp[["Dxy"]])),
    sprintf('        "val.prob Eavg (lowess)": %s,  # val.prob smooths with lowess(iter=0), not loess', num(vp[["Eavg"]])),
    "        # glm(y ~ 1, offset = qlogis(p), binomial) and glm(y ~ qlogis(p), binomial); confint() profile intervals",
    sprintf('        "calibration-in-the-large": %s,', num(citl)),
    sprintf('        "calibration-in-the-large ci": %s,', num(citl_ci)),
    sprintf('        "calibration-in-the-large ci exact": %s,  # uniroot on the deviance', num(citl_exact)),
    sprintf('        "calibration slope": %s,', num(slope)),
    sprintf('        "calibration slope ci": %s,', num(slope_ci)),
    sprintf('        "calibration slope ci exact": %s,  # uniroot on the profile deviance', num(slope_exact)),
    "        # loess(y ~ p), predicted at p and on seq(min(p), max(p), length.out = 11)",
    sprintf('        "ICI": %s,', num(mean(dd))),
    sprintf('        "E50": %s,', num(median(dd))),
    sprintf('        "E90": %s,', num(quantile(dd, 0.9))),
    sprintf('        "Emax": %s,', num(max(dd))),
    sprintf('        "loess_grid_x": %s,', num(grid)),
    sprintf('        "loess_grid": %s,', num(grid_pred)),
    "        # direct formulas; pROC::ci.auc(roc(y, p, direction = \"<\", levels = c(0, 1)), method = \"delong\")",
    sprintf('        "O:E": %s,', num(sum(y) / sum(p))),
    sprintf('        "Brier": %s,', num(brier)),
    sprintf('        "scaled Brier": %s,', num(1 - brier / (mean(y) * (1 - mean(y))))),
    sprintf('        "AUROC": %s,', num(auc_ci[2])),
    sprintf('        "AUROC ci": %s,', num(auc_ci[c(1, 3)])),
    "    },")
}
out <- c(out, "}", "")

# likelihood-ratio tests of heterogeneity between groups of rows of overconfident_1000.csv
d <- read.csv(file.path(data_dir, "overconfident_1000.csv"))
p <- d$p; y <- d$y; lp <- qlogis(p)
splits <- list(
  "2 groups" = factor(rep(c("A", "B"), c(500, 500))),
  "3 groups" = factor(rep(c("A", "B", "C"), c(300, 400, 300))))
out <- c(out, "# overconfident_1000.csv split by rows: 2 groups = rows 1-500 A, 501-1000 B;",
         "# 3 groups = rows 1-300 A, 301-700 B, 701-1000 C",
         "HETEROGENEITY = {")
for (split in names(splits)) {
  g <- splits[[split]]
  # intercept: glm(y ~ 1, offset = logit(p)) against glm(y ~ g, offset = logit(p))
  m0 <- glm(y ~ 1, offset = lp, family = binomial, control = tight)
  m1 <- glm(y ~ g, offset = lp, family = binomial, control = tight)
  # slope: glm(y ~ g + logit(p)) against glm(y ~ g * logit(p))
  s0 <- glm(y ~ g + lp, family = binomial, control = tight)
  s1 <- glm(y ~ g * lp, family = binomial, control = tight)
  for (kind in c("intercept", "slope")) {
    a <- if (kind == "intercept") anova(m0, m1, test = "LRT") else anova(s0, s1, test = "LRT")
    stat <- a$Deviance[2]; df <- a$Df[2]; pv <- a[["Pr(>Chi)"]][2]
    stopifnot(abs(pv - pchisq(stat, df, lower.tail = FALSE)) < 1e-15)
    out <- c(out, sprintf('    ("overconfident_1000", "%s", "%s"): {"statistic": %s, "df": %d, "pvalue": %s},',
                          split, kind, num(stat), as.integer(df), num(pv)))
  }
}
out <- c(out, "}")

cat(sprintf("# %s; rms %s, Hmisc %s, pROC %s, MASS %s\n# profile intervals by %s\n",
            R.version.string, packageVersion("rms"), packageVersion("Hmisc"), packageVersion("pROC"),
            packageVersion("MASS"), confint_source))
cat("# R warnings (confint, loess):", if (length(warnings_seen)) paste(unique(warnings_seen), collapse = " | ") else "none")
cat("\n")
cat("# largest differences between ways of computing the same number in R:", checks, sep = "\n")
cat(out, sep = "\n")
