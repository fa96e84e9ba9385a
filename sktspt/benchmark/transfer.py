"""Transfer (``spt-transfer``): one pretrainer on a corpus of datasets seeds every fit.

An :class:`~sktspt.SPTPretrainer` is fitted, labels unused, on the union of the
*training* splits of the univariate datasets that ship with sktime (:data:`CORPUS`; no
test split is ever read), series of unequal lengths together (a list of series). Each
``spt-transfer`` job then fine-tunes an :class:`~sktspt.SPTClassifier` from it through
``pretrainer=FrozenEstimator(...)``.

A pretrainer fixes the network and the input handling of every classifier it seeds
(``sktspt._start.PRETRAINER_SETTINGS``): the choices here are

- ``normalize="instance"``: each series standardised on its own, because the corpus
  mixes datasets whose scales differ by orders of magnitude (ACSF1's and PLAID's raw
  power readings beside z-normalised UCR sets), and global statistics of the corpus
  would mis-scale every target;
- ``tokenizer__patch_size``: ``"auto"`` on the corpus (about 32 tokens for its median series), one
  pretrainer for every target, unless ``--model-params tokenizer__patch_size=...`` sets it. Short
  targets (ItalyPowerDemand, 24 steps) get few tokens from it.

The other architecture parameters, the seed and ``--pretrain-epochs`` are the job's, as
for ``spt-span``; the pretraining budget is ``schedule__steps`` steps (one phase's), like a
standalone ``SPTPretrainer``.

The fitted pretrainer is cached per process by (seed, corpus, settings), so a worker
fits it once per seed rather than once per job. Its fit happens in the model factory,
before the timed fit, so a row's ``fit_s`` is the fine-tuning only; each pretrainer fit
is logged on stderr with its duration.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .datasets import load_dataset

__all__ = ["CORPUS", "corpus_series", "transfer_pretrainer"]

#: The transfer corpus: the univariate sets among :data:`~sktspt.benchmark.DATASETS`
#: (sktime's files; only their training splits are read).
CORPUS: tuple[str, ...] = ("GunPoint", "ArrowHead", "ItalyPowerDemand", "OSULeaf", "ACSF1",
                           "PLAID")
#: The corpus mixes scales: each series is standardised on its own (see the module doc).
_NORMALIZE = "instance"

_CACHE: dict[tuple, object] = {}


def corpus_series(names=None, data_dir=None) -> list[np.ndarray]:
    """The training series of ``names``, each ``(n_channels, length)``, in name order.

    Only training splits are read; labels are dropped.
    """
    from ..data import check_panel

    series = []
    for name in CORPUS if names is None else names:
        X_tr = load_dataset(name, data_dir)[0]
        panel, info = check_panel(X_tr)
        for row in np.asarray(panel, dtype=np.float64):  # NaN-padded to the longest
            observed = np.flatnonzero(~np.isnan(row).all(axis=0))
            length = observed[-1] + 1 if observed.size else row.shape[1]
            series.append(row[:, :length])
    return series


def _pretrainer_params(classifier_params: dict) -> dict:
    """The SPTClassifier settings an SPTPretrainer also takes."""
    from ..pretrainer import SPTPretrainer

    shared = {*SPTPretrainer().get_params(deep=False), *SPTPretrainer._routed} - {"callbacks"}
    return {k: v for k, v in classifier_params.items() if k in shared}


def transfer_pretrainer(seed: int, classifier_params: dict, corpus=None, data_dir=None):
    """A fitted SPTPretrainer on ``corpus``, wrapped in ``FrozenEstimator``; cached.

    ``corpus`` defaults to :data:`CORPUS`. ``classifier_params`` are the SPTClassifier
    settings of the job (architecture, pretraining epochs, ``--model-params``); those an
    SPTPretrainer takes are used, with ``random_state=seed``, and ``normalize="instance"``
    where they do not set ``normalize``.
    """
    from sklearn.frozen import FrozenEstimator

    from ..pretrainer import SPTPretrainer

    corpus = tuple(CORPUS if corpus is None else corpus)
    params = _pretrainer_params(classifier_params)
    params.setdefault("normalize", _NORMALIZE)
    params["random_state"] = seed
    key = (seed, tuple(corpus), repr(sorted(params.items())))
    if key not in _CACHE:
        start = time.perf_counter()
        series = corpus_series(corpus, data_dir)
        pre = SPTPretrainer(**params).fit(series)
        print(f"spt-transfer: pretrained on {len(series)} series of {', '.join(corpus)} "
              f"(seed {seed}) in {time.perf_counter() - start:.0f} s", file=sys.stderr,
              flush=True)
        _CACHE[key] = FrozenEstimator(pre)
    return _CACHE[key]
