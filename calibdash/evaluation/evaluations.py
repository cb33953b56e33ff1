"""Several results in one object and one file: ``{model name: {notion: EvaluationResult}}``.

One JSON format holds every result calibdash writes: one notion of one model (the app's
download, :meth:`EvaluationResult.to_json`), several notions, or several models (the
command line's ``result.json``). It is read back by :meth:`Evaluations.from_json`, and
:meth:`Evaluations.of` is the one place that interprets the shapes in which results are
passed around (a result, ``{notion: result}``, ``{model: ...}``).
"""

from __future__ import annotations

from collections.abc import Mapping

from calibdash.core.notions import NOTIONS
from calibdash.errors import InputError
from calibdash.evaluation.result import UNNAMED, EvaluationResult, results_from_json, results_to_json

__all__ = ["Evaluations"]

def _notion_of(result):
    return result.config.get("call", {}).get("notion")


def _notion_dict(obj, where):
    """{notion: result}, in the order given, from a result, a dict or a list of results."""
    if isinstance(obj, EvaluationResult):
        items = [obj]
    elif isinstance(obj, Mapping):
        items = list(obj.values())
        for key, res in obj.items():
            if isinstance(res, EvaluationResult) and key != _notion_of(res):
                raise InputError(f"{where}: the result under {key!r} is for the {_notion_of(res)!r} notion.")
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    else:
        raise InputError(f"{where}: expected an EvaluationResult or a dict {{notion: EvaluationResult}}, got {type(obj).__name__}.")
    if not items:
        raise InputError(f"{where}: no results given.")
    out = {}
    for res in items:
        if not isinstance(res, EvaluationResult):
            raise InputError(f"{where}: expected EvaluationResult objects, got {type(res).__name__}.")
        notion = _notion_of(res)
        if notion in out:
            raise InputError(f"{where}: two results for the {notion!r} notion; give one per notion.")
        out[notion] = res
    shas = {res.config.get("data_sha256") for res in out.values()}
    if len(shas) > 1:
        raise InputError(
            f"{where}: the results were computed on different data (sha256 "
            f"{', '.join(sorted(str(s)[:12] for s in shas))}); one model's notions must share its data."
        )
    return out


def _is_notion_dict(obj):
    return (isinstance(obj, Mapping) and bool(obj)
            and all(isinstance(v, EvaluationResult) and k in NOTIONS and k == _notion_of(v) for k, v in obj.items()))


class Evaluations(Mapping):
    """Results of one or several models, each for one or several notions.

    A read-only mapping ``{model name: {notion: EvaluationResult}}``. A single model
    passed without a name has the name None (written as ``"model"``).

    Parameters
    ----------
    models : mapping
        ``{model name: {notion: EvaluationResult}}``.
    command : list of str or None
        The command line that produced them, if any (kept in the file).
    """

    def __init__(self, models, *, command=None):
        if not isinstance(models, Mapping) or not models:
            raise InputError("Evaluations need at least one model's results: {model name: {notion: EvaluationResult}}.")
        self._models = {name: _notion_dict(results, "results" if name is None else f"results[{name!r}]")
                        for name, results in models.items()}
        self.command = list(command) if command else None

    @classmethod
    def of(cls, results, *, name=None):
        """The results as an :class:`Evaluations`, whatever shape they were given in.

        Parameters
        ----------
        results : Evaluations, EvaluationResult, dict or list
            * one ``EvaluationResult``, ``{notion: EvaluationResult}`` or a list of one
              model's results: one model, called ``name``;
            * ``{model name: result, {notion: result} or list}``: several models. A dict
              whose keys are notions and whose values are results for those notions is
              always read as one model.
        name : str or None
            The name of a single model given without one.
        """
        if isinstance(results, Evaluations):
            return results
        if isinstance(results, (EvaluationResult, list, tuple)) or _is_notion_dict(results):
            return cls({name: results})
        if isinstance(results, Mapping) and results:
            return cls({str(model): r for model, r in results.items()})
        raise InputError(
            "results must be an EvaluationResult, a dict {notion: EvaluationResult}, or a dict "
            f"{{model name: results}} for several models; got {type(results).__name__}"
            + (" (empty)" if isinstance(results, Mapping) else "") + "."
        )

    def __getitem__(self, name):
        return self._models[name]

    def __iter__(self):
        return iter(self._models)

    def __len__(self):
        return len(self._models)

    def __repr__(self):
        inner = ", ".join(f"{name!r}: [{', '.join(notions)}]" for name, notions in self._models.items())
        return f"Evaluations({{{inner}}})"

    def results(self):
        """Every (model name, notion, EvaluationResult), in order."""
        return [(name, notion, res) for name, notions in self._models.items() for notion, res in notions.items()]

    # -- the file format ---------------------------------------------------------------------
    def to_json(self, indent=None):
        """The JSON text of the results (standard JSON: NaN is written as null)."""
        return results_to_json(self._models, self.command, indent=indent)

    @classmethod
    def from_json(cls, text, *, name=UNNAMED):
        """Read results written by :meth:`to_json` (without the fitted models).

        Also reads the two formats it replaced: the command line's run file and a single
        result. A model written without a name (e.g. by ``EvaluationResult.to_json``), and the
        old single result, are called ``name``.
        """
        models, command = results_from_json(text, name)
        return cls(models, command=command)
