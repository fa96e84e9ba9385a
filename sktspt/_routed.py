"""Routed settings: ``<group>__<name>`` keywords for the component that takes them, as
skorch routes ``module__x`` to the module's own constructor (``get_params_for``).

An estimator names each group's component in ``_routes`` (``{"attention": Lighthouse}``);
the group's settings are the component's keyword-only arguments, with the defaults of its
signature (:func:`routed_defaults`) and the documentation of its docstring
(:mod:`sktspt._param_docs`). The names removed in 0.5 raise ``TypeError`` saying what
replaced them (:data:`sktspt._param_hints.REMOVED`).
"""

from __future__ import annotations

import inspect
from typing import Any

from ._param_hints import removed_message, unknown_keyword_message
from ._params import init_parameters as _init_parameters

__all__ = ["PHASE_STEPS", "RoutedParams", "params_for", "phase_steps", "routed_defaults"]


#: Optimizer steps of one ``"auto"`` phase where ``schedule__steps`` is ``"auto"``.
PHASE_STEPS = 1000


def phase_steps(steps) -> int:
    """``schedule__steps`` as the steps of one phase: :data:`PHASE_STEPS` for ``"auto"``."""
    return PHASE_STEPS if steps == "auto" else int(steps)


def routed_defaults(routes: dict) -> dict[str, Any]:
    """``{"<group>__<name>": default}``: each keyword-only argument of each group's
    component, with the default of the component's signature."""
    return {f"{group}__{name}": p.default
            for group, component in routes.items()
            for name, p in inspect.signature(component).parameters.items()
            if p.kind is p.KEYWORD_ONLY}


class RoutedParams:
    """Mixin: routed ``<group>__<name>`` settings beside the explicit parameters.

    ``__init__`` stores the explicit parameters and passes the other keywords to
    :meth:`_set_routed`, which keeps them in one private mapping (``_routed_values``), so
    that the public attributes are exactly the explicit parameters (scikit-learn's
    convention); ``est.attention__levels`` still reads a setting, given or its default.
    ``get_params``, ``set_params``, ``clone``, pickling and ``GridSearchCV`` see them.

    As scikit-learn asks, neither ``__init__`` nor ``set_params`` checks a value: a typo is
    kept (and cloned) and ``fit`` refuses it naming the closest valid name, as LightGBM
    does. A name removed in 0.5 can never become valid: it raises ``TypeError`` at once.
    """

    _routes: dict[str, Any] = {}
    _routed: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._routed = routed_defaults(cls._routes)

    @classmethod
    def _refuse_removed(cls, names) -> None:
        """``TypeError`` for a name removed in 0.5 (an old flat name or a rejected option)."""
        for name in names:
            if name not in cls._routed and (message := removed_message(cls, name)):
                raise TypeError(message)

    @property
    def _values(self) -> dict:
        """The routed settings given (created on first use: copies skip ``__init__``)."""
        return self.__dict__.setdefault("_routed_values", {})

    def _set_routed(self, kwargs: dict) -> None:
        """Store ``kwargs`` (routed settings, and typos for ``fit`` to refuse)."""
        self._refuse_removed(kwargs)
        self.__dict__["_routed_values"] = dict(kwargs)

    def _check_routed(self) -> None:
        """Refuse, naming the closest valid name, what is no parameter or setting."""
        for name in self._values:
            if name not in self._routed:
                raise TypeError(unknown_keyword_message(type(self), name))

    def __getattr__(self, name: str):
        # Only reached where normal lookup fails: routed settings read as attributes.
        if not name.startswith("_") and name in type(self)._routed:
            return self._values.get(name, type(self)._routed[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_params(self, deep=True):
        """The explicit parameters, plus the routed settings that were given (as skorch)."""
        params = super().get_params(deep=deep)
        params.update(self._values)
        return params

    def set_params(self, **params):
        """Set parameters; ``<group>__<name>`` settings and anything that is no explicit
        parameter are stored here (and checked in ``fit``)."""
        explicit = set(self._get_param_names())
        extra = {key: params.pop(key) for key in list(params)
                 if key not in explicit and not _nested(self, key)}
        self._refuse_removed(extra)
        self._values.update(extra)
        return super().set_params(**params) if params else self

    def _settings(self) -> dict:
        """Every parameter and setting as this estimator uses it: the explicit parameters
        as set, each routed setting as given or its default. Inside ``fit``, the read-only
        mapping that fit resolved and validated at its start
        (:func:`sktspt._base.estimator_call`)."""
        if (frozen := self.__dict__.get("_fit_settings")) is not None:
            return frozen
        settings = {n: getattr(self, n) for n, p in _init_parameters(type(self)).items()
                    if p.kind is not p.VAR_KEYWORD}
        return {**settings, **self._routed,
                **{k: v for k, v in self._values.items() if k in self._routed}}


def _nested(est, key: str) -> bool:
    """Whether ``key`` addresses a parameter of an estimator-valued parameter."""
    value = est.__dict__.get(key.partition("__")[0])
    return callable(getattr(value, "set_params", None))


def params_for(settings, prefix: str) -> dict:
    """The settings routed to component ``prefix``, without the prefix: skorch's
    ``get_params_for`` (``architecture__n_heads`` is the encoder's own ``n_heads``)."""
    start = prefix + "__"
    return {k[len(start):]: v for k, v in settings.items() if k.startswith(start)}

