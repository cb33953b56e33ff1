"""The literature behind each estimator: a short citation, a link and BibTeX.

Every report lists the works its numbers rest on. Page numbers, volumes and DOIs are
given only where they were confirmed; an entry without them is incomplete, not wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibdash.estimators.registry import REGISTRY


@dataclass(frozen=True)
class Reference:
    """One published work.

    Attributes
    ----------
    key : str
        BibTeX key, e.g. ``"gruber2025optimizing"``.
    citation : str
        One line for a reader: authors, title, venue, year.
    url : str
        A page where the work can be read (a plain link; nothing is loaded from it), or
        "" when none was confirmed.
    bibtex : str
        The BibTeX entry.
    role : str
        What calibdash uses it for.
    """

    key: str
    citation: str
    url: str
    bibtex: str
    role: str


REFERENCES = {
    r.key: r
    for r in (
        Reference(
            "gruber2025optimizing",
            "S. G. Gruber and F. Bach. Optimizing Estimators of Squared Calibration Errors in "
            "Classification. Transactions on Machine Learning Research (TMLR), 2025.",
            "https://arxiv.org/abs/2410.07014",
            """@article{gruber2025optimizing,
  author  = {Gruber, Sebastian G. and Bach, Francis},
  title   = {Optimizing Estimators of Squared Calibration Errors in Classification},
  journal = {Transactions on Machine Learning Research},
  issn    = {2835-8856},
  year    = {2025},
  eprint  = {2410.07014},
  archivePrefix = {arXiv},
  url     = {https://arxiv.org/abs/2410.07014}
}""",
            "the risk (Eq. 20), the training-validation-holdout pipeline (Algorithm 1), "
            "histogram binning as a calibration estimation function and the kernel ridge "
            "estimators (ukkr, kkkr)",
        ),
        Reference(
            "guo2017calibration",
            "C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger. On Calibration of Modern Neural "
            "Networks. International Conference on Machine Learning (ICML), 2017.",
            "https://arxiv.org/abs/1706.04599",
            """@inproceedings{guo2017calibration,
  author    = {Guo, Chuan and Pleiss, Geoff and Sun, Yu and Weinberger, Kilian Q.},
  title     = {On Calibration of Modern Neural Networks},
  booktitle = {International Conference on Machine Learning (ICML)},
  year      = {2017},
  eprint    = {1706.04599},
  archivePrefix = {arXiv},
  url       = {https://arxiv.org/abs/1706.04599}
}""",
            "the 15-bin expected calibration error and temperature scaling",
        ),
        Reference(
            "popordanoska2022consistent",
            "T. Popordanoska, R. Sayer and M. B. Blaschko. A Consistent and Differentiable Lp "
            "Canonical Calibration Error Estimator. Advances in Neural Information Processing "
            "Systems (NeurIPS), 2022.",
            "https://openreview.net/forum?id=HMs5pxZq1If",
            """@inproceedings{popordanoska2022consistent,
  author    = {Popordanoska, Teodora and Sayer, Raphael and Blaschko, Matthew B.},
  title     = {A Consistent and Differentiable {$L_p$} Canonical Calibration Error Estimator},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  year      = {2022},
  url       = {https://openreview.net/forum?id=HMs5pxZq1If}
}""",
            "the Dirichlet kernel density estimator (kde)",
        ),
        Reference(
            "widmann2019calibration",
            "D. Widmann, F. Lindsten and D. Zachariah. Calibration tests in multi-class "
            "classification: A unifying framework. Advances in Neural Information Processing "
            "Systems (NeurIPS), 2019.",
            "https://arxiv.org/abs/1910.11385",
            """@inproceedings{widmann2019calibration,
  author    = {Widmann, David and Lindsten, Fredrik and Zachariah, Dave},
  title     = {Calibration tests in multi-class classification: A unifying framework},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  year      = {2019},
  eprint    = {1910.11385},
  archivePrefix = {arXiv},
  url       = {https://arxiv.org/abs/1910.11385}
}""",
            "the squared kernel calibration error (SKCE) and its calibration tests",
        ),
        Reference(
            "berta2026variational",
            "E. Berta, S. Braun, D. Holzmüller, F. Bach and M. I. Jordan. A Variational "
            "Estimator for Lp Calibration Errors. arXiv:2602.24230, 2026.",
            "https://arxiv.org/abs/2602.24230",
            """@misc{berta2026variational,
  author  = {Berta, Eug{\\`e}ne and Braun, Sacha and Holzm{\\"u}ller, David and Bach, Francis and Jordan, Michael I.},
  title   = {A Variational Estimator for {$L_p$} Calibration Errors},
  year    = {2026},
  eprint  = {2602.24230},
  archivePrefix = {arXiv},
  url     = {https://arxiv.org/abs/2602.24230}
}""",
            "the variational estimator",
        ),
        Reference(
            "posocco2021estimating",
            "N. Posocco and A. Bonnefoy. Estimating Expected Calibration Errors. "
            "arXiv:2109.03480, 2021.",
            "https://arxiv.org/abs/2109.03480",
            """@misc{posocco2021estimating,
  author  = {Posocco, Nicolas and Bonnefoy, Antoine},
  title   = {Estimating Expected Calibration Errors},
  year    = {2021},
  eprint  = {2109.03480},
  archivePrefix = {arXiv},
  url     = {https://arxiv.org/abs/2109.03480}
}""",
            "the ECE estimators with equal-mass bins, linear binning and a kernel density",
        ),
        Reference(
            "zadrozny2002transforming",
            "B. Zadrozny and C. Elkan. Transforming classifier scores into accurate multiclass "
            "probability estimates. ACM SIGKDD International Conference on Knowledge Discovery "
            "and Data Mining (KDD), 2002.",
            "",
            """@inproceedings{zadrozny2002transforming,
  author    = {Zadrozny, Bianca and Elkan, Charles},
  title     = {Transforming classifier scores into accurate multiclass probability estimates},
  booktitle = {Proceedings of the Eighth ACM SIGKDD International Conference on Knowledge Discovery and Data Mining (KDD)},
  year      = {2002}
}""",
            "isotonic regression as a recalibration map",
        ),
        Reference(
            'vancalster2019calibration',
            'B. Van Calster, D. J. McLernon, M. van Smeden, L. Wynants and E. W. Steyerberg. Calibration: the'
            ' Achilles heel of predictive analytics. BMC Medicine 17 (2019) 230.',
            'https://doi.org/10.1186/s12916-019-1466-7',
            """@article{vancalster2019calibration,
  author  = {Van Calster, Ben and McLernon, David J. and van Smeden, Maarten and Wynants, Laure and Steyerberg, Ewout W.},
  title   = {Calibration: the {A}chilles heel of predictive analytics},
  journal = {BMC Medicine},
  volume  = {17},
  pages   = {230},
  year    = {2019},
  doi     = {10.1186/s12916-019-1466-7}
}""",
            'the calibration hierarchy (mean, weak, moderate calibration) and the flexible calibration curve',
        ),
        Reference(
            'austin2019integrated',
            'P. C. Austin and E. W. Steyerberg. The Integrated Calibration Index (ICI) and related metrics '
            'for quantifying the calibration of logistic regression models. Statistics in Medicine 38 (2019) '
            '4051-4065.',
            'https://doi.org/10.1002/sim.8281',
            """@article{austin2019integrated,
  author  = {Austin, Peter C. and Steyerberg, Ewout W.},
  title   = {The Integrated Calibration Index ({ICI}) and related metrics for quantifying the calibration of logistic regression models},
  journal = {Statistics in Medicine},
  volume  = {38},
  number  = {21},
  pages   = {4051--4065},
  year    = {2019},
  doi     = {10.1002/sim.8281}
}""",
            'ICI, E50, E90 and Emax from a loess calibration curve',
        ),
        Reference(
            'riley2021minimum',
            'R. D. Riley, T. P. A. Debray, G. S. Collins et al. Minimum sample size for external validation '
            'of a clinical prediction model with a binary outcome. Statistics in Medicine 40 (2021) '
            '4230-4251.',
            'https://doi.org/10.1002/sim.9025',
            """@article{riley2021minimum,
  author  = {Riley, Richard D. and Debray, Thomas P. A. and Collins, Gary S. and others},
  title   = {Minimum sample size for external validation of a clinical prediction model with a binary outcome},
  journal = {Statistics in Medicine},
  volume  = {40},
  number  = {19},
  pages   = {4230--4251},
  year    = {2021},
  doi     = {10.1002/sim.9025}
}""",
            'the precision targets of a validation study (interval widths of O:E, slope and C statistic)',
        ),
        Reference(
            'collins2016sample',
            'G. S. Collins, E. O. Ogundimu and D. G. Altman. Sample size considerations for the external '
            'validation of a multivariable prognostic model: a resampling study. Statistics in Medicine 35 '
            '(2016) 214-226.',
            'https://doi.org/10.1002/sim.6787',
            """@article{collins2016sample,
  author  = {Collins, Gary S. and Ogundimu, Emmanuel O. and Altman, Douglas G.},
  title   = {Sample size considerations for the external validation of a multivariable prognostic model: a resampling study},
  journal = {Statistics in Medicine},
  volume  = {35},
  number  = {2},
  pages   = {214--226},
  year    = {2016},
  doi     = {10.1002/sim.6787}
}""",
            'at least 100 events and 100 non-events for a validation',
        ),
        Reference(
            'debray2017guide',
            'T. P. A. Debray, J. A. A. G. Damen, K. I. E. Snell, J. Ensor, L. Hooft, J. B. Reitsma, R. D. Riley and K. G. '
            'M. Moons. A guide to systematic review and meta-analysis of prediction model performance. BMJ 356 (2017) '
            'i6460.',
            'https://doi.org/10.1136/bmj.i6460',
            """@article{debray2017guide,
  author  = {Debray, Thomas P. A. and Damen, Johanna A. A. G. and Snell, Kym I. E. and Ensor, Joie and Hooft, Lotty and
             Reitsma, Johannes B. and Riley, Richard D. and Moons, Karel G. M.},
  title   = {A guide to systematic review and meta-analysis of prediction model performance},
  journal = {BMJ},
  volume  = {356},
  pages   = {i6460},
  year    = {2017},
  doi     = {10.1136/bmj.i6460}
}""",
            'the per-centre inputs of the random-effects meta-analysis (log O:E, logit AUROC, calibration-in-the-large, slope)',
        ),
        Reference(
            'hartung2001refined',
            'J. Hartung and G. Knapp. A refined method for the meta-analysis of controlled clinical trials with binary '
            'outcome. Statistics in Medicine 20 (2001) 3875-3889.',
            'https://doi.org/10.1002/sim.1009',
            """@article{hartung2001refined,
  author  = {Hartung, Joachim and Knapp, Guido},
  title   = {A refined method for the meta-analysis of controlled clinical trials with binary outcome},
  journal = {Statistics in Medicine},
  volume  = {20},
  number  = {24},
  pages   = {3875--3889},
  year    = {2001},
  doi     = {10.1002/sim.1009}
}""",
            'the Hartung-Knapp interval of the pooled estimate',
        ),
        Reference(
            'riley2011interpretation',
            'R. D. Riley, J. P. T. Higgins and J. J. Deeks. Interpretation of random effects meta-analyses. BMJ 342 (2011) d549.',
            'https://doi.org/10.1136/bmj.d549',
            """@article{riley2011interpretation,
  author  = {Riley, Richard D. and Higgins, Julian P. T. and Deeks, Jonathan J.},
  title   = {Interpretation of random effects meta-analyses},
  journal = {BMJ},
  volume  = {342},
  pages   = {d549},
  year    = {2011},
  doi     = {10.1136/bmj.d549}
}""",
            "the prediction interval: the range of a new centre's value",
        ),
        Reference(
            'vickers2019simple',
            'A. J. Vickers, B. van Calster and E. W. Steyerberg. A simple, step-by-step guide to interpreting decision '
            'curve analysis. Diagnostic and Prognostic Research 3 (2019) 18.',
            'https://doi.org/10.1186/s41512-019-0064-7',
            """@article{vickers2019simple,
  author  = {Vickers, Andrew J. and van Calster, Ben and Steyerberg, Ewout W.},
  title   = {A simple, step-by-step guide to interpreting decision curve analysis},
  journal = {Diagnostic and Prognostic Research},
  volume  = {3},
  pages   = {18},
  year    = {2019},
  doi     = {10.1186/s41512-019-0064-7}
}""",
            'the range of thresholds fixed before the decision curve is read; net interventions avoided',
        ),
        Reference(
            'clopper1934use',
            'C. J. Clopper and E. S. Pearson. The use of confidence or fiducial limits illustrated in the case of the '
            'binomial. Biometrika 26 (1934) 404-413.',
            'https://doi.org/10.1093/biomet/26.4.404',
            """@article{clopper1934use,
  author  = {Clopper, C. J. and Pearson, E. S.},
  title   = {The use of confidence or fiducial limits illustrated in the case of the binomial},
  journal = {Biometrika},
  volume  = {26},
  number  = {4},
  pages   = {404--413},
  year    = {1934},
  doi     = {10.1093/biomet/26.4.404}
}""",
            'the exact intervals of the grouped points of the calibration plot',
        ),
        Reference(
            'vickers2006decision',
            'A. J. Vickers and E. B. Elkin. Decision curve analysis: a novel method for evaluating prediction'
            ' models. Medical Decision Making 26 (2006) 565-574.',
            'https://doi.org/10.1177/0272989X06295361',
            """@article{vickers2006decision,
  author  = {Vickers, Andrew J. and Elkin, Elena B.},
  title   = {Decision curve analysis: a novel method for evaluating prediction models},
  journal = {Medical Decision Making},
  volume  = {26},
  number  = {6},
  pages   = {565--574},
  year    = {2006},
  doi     = {10.1177/0272989X06295361}
}""",
            'net benefit and the decision curve',
        ),
        Reference(
            'delong1988comparing',
            'E. R. DeLong, D. M. DeLong and D. L. Clarke-Pearson. Comparing the areas under two or more '
            'correlated receiver operating characteristic curves: a nonparametric approach. Biometrics 44 '
            '(1988) 837-845.',
            'https://doi.org/10.2307/2531595',
            """@article{delong1988comparing,
  author  = {DeLong, Elizabeth R. and DeLong, David M. and Clarke-Pearson, Daniel L.},
  title   = {Comparing the areas under two or more correlated receiver operating characteristic curves: a nonparametric approach},
  journal = {Biometrics},
  volume  = {44},
  number  = {3},
  pages   = {837--845},
  year    = {1988},
  doi     = {10.2307/2531595}
}""",
            'the interval of the AUROC',
        ),
        Reference(
            'spiegelhalter1986probabilistic',
            'D. J. Spiegelhalter. Probabilistic prediction in patient management and clinical trials. '
            'Statistics in Medicine 5 (1986) 421-433.',
            'https://doi.org/10.1002/sim.4780050506',
            """@article{spiegelhalter1986probabilistic,
  author  = {Spiegelhalter, David J.},
  title   = {Probabilistic prediction in patient management and clinical trials},
  journal = {Statistics in Medicine},
  volume  = {5},
  number  = {5},
  pages   = {421--433},
  year    = {1986},
  doi     = {10.1002/sim.4780050506}
}""",
            "Spiegelhalter's z test of calibration",
        ),
        Reference(
            'collins2024tripodai',
            'G. S. Collins, K. G. M. Moons, P. Dhiman et al. TRIPOD+AI statement: updated guidance for '
            'reporting clinical prediction models that use regression or machine learning methods. BMJ 385 '
            '(2024) e078378.',
            'https://doi.org/10.1136/bmj-2023-078378',
            """@article{collins2024tripodai,
  author  = {Collins, Gary S. and Moons, Karel G. M. and Dhiman, Paula and others},
  title   = {{TRIPOD+AI} statement: updated guidance for reporting clinical prediction models
           that use regression or machine learning methods},
  journal = {BMJ},
  volume  = {385},
  pages   = {e078378},
  year    = {2024},
  doi     = {10.1136/bmj-2023-078378}
}""",
            'the order of the validation report (items on model performance)',
        ),
    )
}

CORE = "gruber2025optimizing"
# The works behind a clinical validation (calibdash.validate_risk_model and its report), in the
# order the report cites them; the core paper is cited for the risk-optimised calibration error.
VALIDATION_REFERENCES = ("collins2024tripodai", "vancalster2019calibration", "austin2019integrated", "riley2021minimum",
                         "collins2016sample", "delong1988comparing", "spiegelhalter1986probabilistic",
                         "vickers2006decision", "vickers2019simple", "debray2017guide", "hartung2001refined",
                         "riley2011interpretation", "clopper1934use", CORE)


def reference_keys(name):
    """BibTeX keys of the works behind the estimator called ``name``.

    A ranked estimator's are in its registry entry
    (:data:`calibdash.estimators.registry.REGISTRY`). The literature's rows go by their
    name: "skce..." to Widmann et al. 2019, "variational..." to Berta et al., "ece-..." to
    Posocco & Bonnefoy 2021. Any other name maps to the core paper, which also defines the
    risk every estimator is ranked by.
    """
    name = str(name)
    if name in REGISTRY:
        return list(REGISTRY[name].references)
    if name.startswith("skce"):
        return ["widmann2019calibration"]
    if name.startswith("variational"):
        return ["berta2026variational"]
    if name.startswith("ece-"):
        return ["posocco2021estimating"]
    return [CORE]


def references_for(names):
    """The references of the given estimators, the core paper first, each once.

    Parameters
    ----------
    names : iterable of str
        Estimator names (as in ``result.summary["estimator"]``).

    Returns
    -------
    list of (Reference, list of str)
        Each work with the estimators that cite it, in order of first use.
    """
    used = {CORE: []}
    for name in names:
        for key in reference_keys(name):
            estimators = used.setdefault(key, [])
            if name not in estimators:
                estimators.append(name)
    return [(REFERENCES[key], names_) for key, names_ in used.items()]


def bibtex(names):
    """One BibTeX file's text for the given estimators (the core paper included)."""
    return "\n\n".join(ref.bibtex for ref, _ in references_for(names)) + "\n"


__all__ = ["Reference", "REFERENCES", "VALIDATION_REFERENCES", "reference_keys", "references_for", "bibtex"]
