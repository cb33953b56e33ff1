# R reference values for tests/clinical/test_meta.py (the random-effects meta-analysis).
#
# Run from the repository root:  Rscript tests/clinical/reference_meta.R
# It reads the multicentre CSV files of tests/clinical/data (written by make_meta_data.py)
# and prints Python source (META_REFERENCE, DIRECT_REFERENCE and a provenance comment) to
# paste into test_meta.py, so that the test suite needs no R. Numbers are printed with
# sprintf("%.17g"), enough digits to round-trip every double.
#
# Per centre (sorted by name in the C locale, as Python sorts strings):
#   O:E       yi = log(O/E), vi = 1/O - 1/N (every row)
#   CITL      glm(y ~ 1, offset = qlogis(p), binomial): the coefficient and its variance, the
#             inverse Fisher information at it (rows with 0 < p < 1; see inverse_information)
#   slope     glm(y ~ qlogis(p), binomial): likewise, the coefficient of qlogis(p)
#   AUROC     pROC: yi = qlogis(auc), vi = var(roc, method = "delong") / (auc (1 - auc))^2
# A metric is undefined (NA) in a centre with no events or only events, log O:E also when
# O = 0 and its variance when O = N; the slope when a threshold on the risk separates
# events from non-events (glm would report a huge coefficient and a warning); AUROC when it
# is 0 or 1. Then per metric: rma(yi, vi, method = "REML", test = "knha") over the defined
# centres and predict() of it.
#
# Needs the packages metafor and pROC.
suppressPackageStartupMessages({
  library(metafor)
  library(pROC)
})

data_dir <- "tests/clinical/data"
datasets <- c("meta_5_heterogeneous", "meta_8_homogeneous", "meta_15_edge_centres", "meta_2_two_centres")
metrics <- c("O:E", "calibration-in-the-large", "calibration slope", "AUROC")
tight <- glm.control(epsilon = 1e-14, maxit = 100)

num <- function(x) {
  x <- unname(x)
  if (length(x) == 1) return(if (is.na(x)) "nan" else sprintf("%.17g", x))
  paste0("[", paste(sapply(x, num), collapse = ", "), "]")
}

glm_diff <- 0  # largest |default glm - tight glm| over the centres' coefficients
vcov_diff <- 0  # largest relative |vcov(glm) - inverse information at the estimate|
# The inverse Fisher information of a logistic fit at linear predictor eta. vcov() of a glm
# is the same matrix, but at the weights of the last-but-one IRLS iterate (glm.fit stops on
# the change in deviance, which is quadratic in the last step), 1e-7 off relative to it.
inverse_information <- function(X, eta) {
  mu <- plogis(c(eta))
  solve(crossprod(X * (mu * (1 - mu)), X))
}
centre_inputs <- function(p, y) {
  N <- length(y); O <- sum(y); E <- sum(p)
  out <- list()
  out[["O:E"]] <- if (O == 0 || O == N) c(NA, NA) else c(log(O / E), 1 / O - 1 / N)
  inside <- p > 0 & p < 1
  pi <- p[inside]; yi <- y[inside]; lp <- qlogis(pi)
  if (sum(yi) == 0 || sum(yi) == length(yi)) {
    out[["calibration-in-the-large"]] <- c(NA, NA)
    out[["calibration slope"]] <- c(NA, NA)
  } else {
    fit <- glm(yi ~ 1, offset = lp, family = binomial, control = tight)
    a <- unname(coef(fit)[1])
    v <- inverse_information(matrix(1, length(yi), 1), lp + a)[1, 1]
    vcov_diff <<- max(vcov_diff, abs(vcov(fit)[1, 1] / v - 1))
    out[["calibration-in-the-large"]] <- c(a, v)
    glm_diff <<- max(glm_diff, abs(coef(glm(yi ~ 1, offset = lp, family = binomial))[1] - coef(fit)[1]))
    separated <- max(lp[yi == 0]) <= min(lp[yi == 1]) || max(lp[yi == 1]) <= min(lp[yi == 0])
    if (separated) {
      out[["calibration slope"]] <- c(NA, NA)
    } else {
      fit2 <- glm(yi ~ lp, family = binomial, control = tight)
      X <- cbind(1, lp)
      v <- inverse_information(X, X %*% coef(fit2))[2, 2]
      vcov_diff <<- max(vcov_diff, abs(vcov(fit2)[2, 2] / v - 1))
      out[["calibration slope"]] <- c(unname(coef(fit2)[2]), v)
      glm_diff <<- max(glm_diff, abs(coef(glm(yi ~ lp, family = binomial))[2] - coef(fit2)[2]))
    }
  }
  if (O == 0 || O == N) {
    out[["AUROC"]] <- c(NA, NA)
  } else {
    r <- roc(y, p, direction = "<", levels = c(0, 1), quiet = TRUE)
    a <- as.numeric(auc(r))
    out[["AUROC"]] <- if (a == 0 || a == 1) c(NA, NA) else c(qlogis(a), var(r, method = "delong") / (a * (1 - a))^2)
  }
  out
}

pooled <- function(yi, vi, indent) {
  # when Fisher scoring does not converge, metafor stops with an error and its help suggests
  # shorter steps: control = list(stepadj = 0.5, maxiter = 1000); "half steps" marks that
  res <- try(rma(yi, vi, method = "REML", test = "knha"), silent = TRUE)
  half <- inherits(res, "try-error")
  control <- if (half) list(stepadj = 0.5, maxiter = 1000) else list()
  if (half) res <- rma(yi, vi, method = "REML", test = "knha", control = control)
  pr <- predict(res)
  exact <- rma(yi, vi, method = "REML", test = "knha", control = c(control, list(threshold = 1e-12)))
  ind <- strrep(" ", indent)
  paste0('{\n', ind, sprintf('"estimate": %s, "se": %s, "tau2": %s, "k": %d,\n', num(pr$pred), num(pr$se), num(res$tau2), res$k),
         ind, sprintf('"ci": %s, "pi": %s,\n', num(c(pr$ci.lb, pr$ci.ub)), num(c(pr$pi.lb, pr$pi.ub))),
         ind, sprintf('"tau2 threshold 1e-12": %s, "half steps": %s}', num(exact$tau2), if (half) "True" else "False"))
}

out <- c("META_REFERENCE = {")
for (name in datasets) {
  d <- read.csv(file.path(data_dir, paste0(name, ".csv")), colClasses = c("character", "numeric", "integer"))
  centres <- sort(unique(d$cluster), method = "radix")  # C-locale order
  inputs <- lapply(centres, function(c) centre_inputs(d$p[d$cluster == c], d$y[d$cluster == c]))
  names(inputs) <- centres
  out <- c(out, sprintf('    "%s": {', name), '        "centres": {  # (cluster, metric): [yi, vi]')
  for (m in metrics) for (c in centres)
    out <- c(out, sprintf('            ("%s", "%s"): %s,', c, m, num(inputs[[c]][[m]])))
  out <- c(out, "        },", '        "pooled": {  # rma(yi, vi, method = "REML", test = "knha") and predict(), analysis scale')
  for (m in metrics) {
    yi <- sapply(centres, function(c) inputs[[c]][[m]][1])
    vi <- sapply(centres, function(c) inputs[[c]][[m]][2])
    ok <- !is.na(yi)
    out <- c(out, sprintf('            "%s": %s,', m, pooled(yi[ok], vi[ok], 16)))
  }
  out <- c(out, "        },", "    },")
}
out <- c(out, "}", "")

# direct cases of rma + predict: all estimates equal (Hartung-Knapp's q is 0), k = 2 far
# apart, k = 3 with very different variances, k = 4 where REML lands on tau^2 = 0, k = 12,
# and k = 9 where full Fisher scoring steps cycle
direct <- list(
  "equal" = list(yi = c(0.3, 0.3, 0.3), vi = c(0.01, 0.04, 0.02)),
  "two far apart" = list(yi = c(-1.2, 1.5), vi = c(0.05, 0.08)),
  "three unequal" = list(yi = c(0.1, 0.9, -0.4), vi = c(0.001, 0.2, 0.6)),
  "four homogeneous" = list(yi = c(0.10, 0.12, 0.05, 0.15), vi = c(0.02, 0.03, 0.025, 0.04)),
  "twelve" = list(yi = c(-0.52, 0.11, 0.34, -0.05, 0.78, 0.21, -0.33, 0.46, 0.02, 0.15, -0.18, 0.63),
                  vi = c(0.04, 0.09, 0.02, 0.05, 0.12, 0.03, 0.07, 0.06, 0.015, 0.08, 0.05, 0.1)),
  # full Fisher scoring steps cycle here (between about 0 and 0.15): metafor stops with an error
  "cycling" = list(yi = c(-0.14, 0.45, -0.19, 0.06, 0.29, -0.09, -0.19, 0.06, -0.32),
                   vi = c(0.26, 0.02, 0.16, 0.23, 0.11, 0.14, 0.25, 0.24, 0.07)))
out <- c(out, "DIRECT_REFERENCE = {")
for (name in names(direct)) {
  x <- direct[[name]]
  short <- function(v) paste0("[", paste(sprintf("%.15g", v), collapse = ", "), "]")  # typed decimals round-trip
  out <- c(out, sprintf('    "%s": (', name), sprintf("        %s,", short(x$yi)), sprintf("        %s,", short(x$vi)), sprintf("        %s),", pooled(x$yi, x$vi, 9)))
}
out <- c(out, "}")

cat(sprintf("# %s; metafor %s, pROC %s\n", R.version.string, packageVersion("metafor"), packageVersion("pROC")))
cat(sprintf("# largest |glm at its default epsilon - glm at epsilon 1e-14| of a centre's coefficient: %.2g\n", glm_diff))
cat(sprintf("# largest relative |vcov(glm) - inverse information at the estimate| of a centre: %.2g\n", vcov_diff))
cat(out, sep = "\n")
