"""Advice on a tuned value at the edge of its grid: the facts once, worded for each reader.

The pipeline records a :class:`GridEdge` for every chosen hyperparameter that is the
smallest or largest of its grid. Its :meth:`GridEdge.text` is the one place where that advice
becomes words: ``"python"`` names the keyword and the estimator as Python and the command
line spell them (the result's ``warnings``, the CLI and the report print it), ``"app"`` says
it in plain words (the app's verdict), and :meth:`GridEdge.extended_grid` is the grid to try
next (the app's button puts it in the Evaluate page's grid box).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from calibdash.estimators.registry import parameter

__all__ = ["GridEdge", "AUDIENCES"]

AUDIENCES = ("python", "app")
# Values added beyond the edge: enough to see the risk turn (or flatten), few enough to stay cheap.
_EXTRA = 3


def _g(value):
    return f"{value:g}"


@dataclass(frozen=True)
class GridEdge:
    """A chosen value at the edge of its grid.

    Attributes
    ----------
    estimator : str
    param : str
        The tuned keyword (``"lam"``, ``"bandwidth"``, ``"n_bins"``...).
    value : float
        The chosen value.
    side : {"low", "high"}
        The smallest or the largest value of the grid.
    grid : tuple
        The numeric values tried.
    flat : bool
        The risk is flat at the edge (the paired risk difference to the next value is within
        one standard error): values beyond it would not do better.
    """

    estimator: str
    param: str
    value: float
    side: str
    grid: tuple
    flat: bool

    def to_dict(self):
        return {**asdict(self), "grid": list(self.grid)}

    @classmethod
    def from_dict(cls, obj):
        return cls(**{**obj, "grid": tuple(obj["grid"])})

    def extended_grid(self):
        """The grid with three more values beyond the edge, spaced as its two outermost values
        (whole numbers for an integer parameter, never below 1)."""
        values = sorted(self.grid)
        edge, inner = (values[0], values[1]) if self.side == "low" else (values[-1], values[-2])
        ratio = max(edge, inner) / min(edge, inner) if min(edge, inner) > 0 else 10.0
        step = ratio if self.side == "high" else 1 / ratio
        integer = (described := parameter(self.param)) is not None and described.kind == "integer"
        extra = []
        for k in range(1, _EXTRA + 1):
            v = edge * step ** k
            v = max(1, round(v)) if integer else float(f"{v:.6g}")
            if v not in values and v not in extra:
                extra.append(v)
        return sorted(values + extra)

    def text(self, audience="python"):
        """The advice worded for ``audience`` (one of :data:`AUDIENCES`)."""
        lo, hi = min(self.grid), max(self.grid)
        where = "larger" if self.side == "high" else "smaller"
        extreme = "largest" if self.side == "high" else "smallest"
        if audience == "python":
            span = f"({_g(lo)} to {_g(hi)})"
            if self.flat:
                return (f"{self.estimator}: the selected {self.param} = {_g(self.value)} lies at the {self.side} edge of its "
                        f"grid {span}, but the risk is flat there: the two {extreme} values predict held-out calibration "
                        f"gaps equally well (their paired risk difference is within one standard error), so {where} "
                        "values would not do better and the grid need not be extended.")
            return (f"{self.estimator}: the selected {self.param} = {_g(self.value)} lies at the {self.side} edge of its "
                    f"grid {span} and the risk is still falling there, so a {where} value may fit better: add {where} "
                    f"values of {self.param} to the grid of {self.estimator}.")
        if audience == "app":
            described = parameter(self.param)
            words = described.words if described else self.param
            head = (f"{self.estimator}: the chosen {words}, {_g(self.value)}, is the {extreme} value tried "
                    f"({_g(lo)} to {_g(hi)})")
            if self.flat:
                return (head + f", but the risk is flat there: {where} values would predict the held-out calibration gaps "
                        "no better, so there is nothing to change.")
            return head + f", and the risk was still falling there: a {where} value may fit better. Try {where} values."
        raise ValueError(f"audience must be one of {AUDIENCES}, got {audience!r}.")
