"""Few labels and transfer in the benchmark: the labelled subset, what each model sees,
the label-fraction column, figure and resume, and the transfer pretrainer."""

import numpy as np
import pandas as pd
import pytest
from conftest import Majority

from sktspt.benchmark import MODELS, ModelSpec, load_dataset, main
from sktspt.benchmark.labels import SelfTrainingMiniRocket, labelled_subset
from sktspt.benchmark.models import RunConfig
from sktspt.benchmark.results import ResultsFile, read_results
from sktspt.benchmark.run import Job, run_job

DATASET = "ItalyPowerDemand"
TINY = {"d_model": 16, "architecture__n_heads": 2, "architecture__dim_feedforward": 32,
        "depth": 1}


# --- the labelled subset --------------------------------------------------------------------
def test_labelled_subset_is_stratified_seeded_nested_and_keeps_every_class():
    y = np.array(["a"] * 40 + ["b"] * 15 + ["c"] * 3 + ["d"])
    rng = np.random.default_rng(1)
    y = y[rng.permutation(y.size)]
    for fraction in (0.05, 0.1, 0.25, 0.5):
        idx = labelled_subset(y, fraction, seed=3)
        assert np.all(np.diff(idx) > 0)  # sorted, no repeats
        kept = pd.Series(y[idx]).value_counts()
        for label, count in pd.Series(y).value_counts().items():
            assert kept[label] == max(1, round(fraction * count)), (fraction, label)
        np.testing.assert_array_equal(idx, labelled_subset(list(y), fraction, seed=3))
    assert not np.array_equal(labelled_subset(y, 0.25, 0), labelled_subset(y, 0.25, 1))
    small, large = labelled_subset(y, 0.1, 7), labelled_subset(y, 0.25, 7)
    assert set(small) <= set(large)
    np.testing.assert_array_equal(labelled_subset(y, 1.0, 5), np.arange(y.size))


@pytest.mark.parametrize("fraction, error", [(0, ValueError), (1.5, ValueError),
                                             (-0.1, ValueError), (float("nan"), ValueError),
                                             ("0.1", TypeError), (True, TypeError)])
def test_labelled_subset_rejects_fractions_outside_zero_one(fraction, error):
    with pytest.raises(error, match=r"\(0, 1\]"):
        labelled_subset(["a", "b"], fraction, seed=0)


class Recorder:
    """Remembers what fit received; predicts the first label."""

    seen: list = []

    def __init__(self, name):
        self.name = name

    def fit(self, X, y):
        Recorder.seen.append((self.name, np.asarray(X).copy(), np.asarray(y).copy(), None))
        self.label_ = np.asarray(y)[0]
        return self

    def predict(self, X):
        return np.full(len(X), self.label_)


class UnlabelledRecorder(Recorder):
    def fit(self, X, y, X_unlabeled=None):
        super().fit(X, y)
        name, X_, y_, _ = Recorder.seen.pop()
        Recorder.seen.append((name, X_, y_, None if X_unlabeled is None
                              else np.asarray(X_unlabeled).copy()))
        return self


def test_every_model_sees_the_same_labelled_subset_and_only_some_the_unlabelled_rest():
    X_tr, y_tr = load_dataset(DATASET)[:2]
    Recorder.seen = []
    specs = {"plain": ModelSpec(lambda cfg: Recorder("plain"), neural=False),
             "semi": ModelSpec(lambda cfg: UnlabelledRecorder("semi"), neural=False)}
    for model, spec in specs.items():
        row = run_job(Job(DATASET, model, 4, None, label_fraction=0.1), spec, 1, 1, {},
                      n_parallel=1)
        assert row["error"] == "" and row["label_fraction"] == 0.1
    (_, X_a, y_a, none), (_, X_b, y_b, rest) = Recorder.seen
    idx = labelled_subset(y_tr, 0.1, 4)
    np.testing.assert_array_equal(X_a, X_tr[idx])
    np.testing.assert_array_equal(X_b, X_a)
    np.testing.assert_array_equal(y_b, y_a)
    assert len(y_a) == len(idx) < len(y_tr) and set(y_a) == set(y_tr)
    assert none is None  # a fit without X_unlabeled fits the labelled part only
    # The unlabelled series are exactly the rest of the training split.
    np.testing.assert_array_equal(rest, np.delete(X_tr, idx, axis=0))


def test_fraction_one_is_the_same_fit_as_no_option():
    rows = [run_job(Job(DATASET, "spt-span", 0, None, label_fraction=f), MODELS["spt-span"],
                    1, 1, TINY, n_parallel=1, threads=1) for f in (None, 1.0)]
    assert rows[0]["error"] == rows[1]["error"] == ""
    assert rows[0]["label_fraction"] is None and rows[1]["label_fraction"] == 1.0
    same = ("accuracy", "n_params", "depth", "pretrain_epochs", "epochs", "augment")
    assert [rows[0][c] for c in same] == [rows[1][c] for c in same]


def test_spt_pretrains_on_the_whole_split_and_fine_tunes_on_the_labelled_part(monkeypatch):
    from sktspt import SPTClassifier

    calls = []
    real_fit = SPTClassifier.fit

    def fit(self, X, y, X_unlabeled=None, sample_weight=None):
        calls.append((self.pretrain_epochs, len(y), None if X_unlabeled is None
                      else len(X_unlabeled)))
        return real_fit(self, X, y, X_unlabeled=X_unlabeled, sample_weight=sample_weight)

    monkeypatch.setattr(SPTClassifier, "fit", fit)
    n = len(load_dataset(DATASET)[1])
    for model in ("spt-span", "scratch"):
        row = run_job(Job(DATASET, model, 0, None, label_fraction=0.25), MODELS[model], 1, 1,
                      TINY, n_parallel=1, threads=1)
        assert row["error"] == ""
    (_, n_spt, u_spt), (scratch_pretrain, n_scratch, u_scratch) = calls
    assert n_spt == n_scratch < n and n_spt + u_spt == n
    assert scratch_pretrain == 0 and u_scratch is None  # scratch is not given the rest


def _optimizer_steps(*histories) -> int:
    return sum(len(epoch["batches"]) for h in histories if h is not None for epoch in h)


@pytest.mark.parametrize("fraction", [0.1, 0.25, None])
def test_scratch_takes_as_many_optimizer_steps_as_spt_at_every_label_fraction(fraction):
    """SPT pretrains on labelled and unlabelled series, then fine-tunes on the labelled ones;
    its control takes the same number of optimizer steps on the labelled ones alone."""
    X_tr, y_tr, _, _, info = load_dataset(DATASET)
    job = Job(DATASET, "spt-span", 0, None, label_fraction=fraction)
    from sktspt.benchmark.run import _split_labels

    X, y, U = _split_labels(job, X_tr, y_tr)
    params = {**TINY, "schedule__steps": 60}
    cfg = RunConfig(seed=0, pretrain_epochs="auto", epochs="auto", depth=None, data=info,
                    params=params, n_labelled=len(y), n_unlabelled=0 if U is None else len(U))
    spt = MODELS["spt-span"].factory(cfg).fit(X, y, X_unlabeled=U)
    scratch = MODELS["scratch"].factory(cfg).fit(X, y)
    spt_steps = _optimizer_steps(spt.pretrain_history_, spt.history_)
    scratch_steps = _optimizer_steps(scratch.history_)
    assert spt._planned_steps(len(y), cfg.n_unlabelled) == spt_steps
    # equal up to one epoch of the labelled series (scratch runs whole epochs)
    assert 0 <= scratch_steps - spt_steps < scratch._trainer().batches(len(y), 0)


def test_self_training_peer_pseudo_labels_unlabelled_series():
    X_tr, y_tr, X_te, y_te, _ = load_dataset(DATASET)
    idx = labelled_subset(y_tr, 0.25, 0)
    rest = np.delete(np.arange(len(y_tr)), idx)
    model = SelfTrainingMiniRocket(seed=0).fit(X_tr[idx], y_tr[idx], X_unlabeled=X_tr[rest])
    assert model.n_pseudo_labelled_ > 0
    assert set(model.predict(X_te)) <= set(y_tr)
    assert np.mean(model.predict(X_te) == y_te) > 0.6  # two classes: chance is 0.5


# --- the command line -----------------------------------------------------------------------
@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(MODELS, "fake", ModelSpec(lambda cfg: Majority(cfg.seed), neural=False))
    monkeypatch.setitem(MODELS, "fake2", ModelSpec(lambda cfg: Majority(cfg.seed), neural=False))


def test_cli_writes_the_fraction_column_the_page_and_the_figure(fake, tmp_path, capsys):
    out, docs = tmp_path / "res", tmp_path / "docs" / "results-labels.md"
    argv = ["--datasets", DATASET, "GunPoint", "--models", "fake", "fake2", "--seeds", "2",
            "--label-fraction", "0.1", "0.5", "1", "--output", str(out),
            "--write-docs", str(docs), "--no-progress"]
    assert main(argv) == 0
    results = read_results(out / "results.csv")
    assert len(results) == 2 * 2 * 2 * 3
    assert sorted(results["label_fraction"].unique()) == [0.1, 0.5, 1.0]
    assert "2 datasets x 2 models x 2 seeds x 3 label fractions" in capsys.readouterr().err
    page = docs.read_text()
    assert "GunPoint, 10 % labels" in page
    assert "## Mean accuracy over the datasets per label fraction" in page
    assert "![accuracy against label fraction](results-labels-labels.png)" in page
    assert "Few labels:" in page and "label fractions 0.1,0.5,1" in page
    for png in (out / "label_fractions.png", docs.parent / "results-labels-labels.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_the_option_there_is_no_fraction_figure_and_the_column_is_empty(fake, tmp_path):
    out = tmp_path / "res"
    assert main(["--datasets", DATASET, "--models", "fake", "--seeds", "1", "--output",
                 str(out), "--no-progress"]) == 0
    assert read_results(out / "results.csv")["label_fraction"].isna().all()
    assert not (out / "label_fractions.png").exists()
    assert "labels" not in (out / "results.md").read_text().split("## Accuracy")[1]


def test_resume_matches_rows_by_label_fraction(fake, tmp_path, capsys):
    out = tmp_path / "res"
    argv = ["--datasets", DATASET, "--models", "fake", "--seeds", "2", "--output", str(out),
            "--no-progress"]
    assert main([*argv, "--label-fraction", "0.2"]) == 0
    capsys.readouterr()
    assert main([*argv, "--label-fraction", "0.2", "1.0", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "skipped 2 fits already in" in err and "; 2 to run" in err
    results = read_results(out / "results.csv")
    assert sorted(zip(results["label_fraction"], results["seed"])) == [
        (0.2, 0), (0.2, 1), (1.0, 0), (1.0, 1)]
    assert main([*argv, "--resume"]) == 0  # no fraction: none of the rows is its
    assert "skipped 0 fits" in capsys.readouterr().err


def test_a_results_file_from_before_label_fractions_resumes(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text("dataset,model,seed,depth,pretrain_epochs,epochs,augment,accuracy,fit_s,"
                    "predict_s,n_params,error\nGunPoint,fake,0,,,,,0.5,0.1,0.1,,\n")
    store = ResultsFile(path)
    frame = store.read()
    assert list(frame["dataset"]) == ["GunPoint"] and frame["label_fraction"].isna().all()
    assert path.read_text().startswith("dataset,model,seed,depth,label_fraction,")


@pytest.mark.parametrize("value, message", [
    ("0", "must be in (0, 1]"), ("1.5", "must be in (0, 1]"), ("x", "takes numbers"),
])
def test_bad_label_fractions_are_clear_errors(value, message, capsys):
    with pytest.raises(SystemExit):
        main(["--label-fraction", value, "--models", "minirocket"])
    assert message in capsys.readouterr().err


def test_repeated_label_fractions_are_an_error(capsys):
    with pytest.raises(SystemExit):
        main(["--label-fraction", "0.1", "0.1"])
    assert "must be distinct" in capsys.readouterr().err


# --- transfer -------------------------------------------------------------------------------
def test_transfer_classifier_starts_from_the_pretrainers_encoder(monkeypatch):
    import torch

    from sktspt.benchmark import transfer
    from sktspt.benchmark.models import RunConfig

    monkeypatch.setattr(transfer, "CORPUS", ("ItalyPowerDemand", "GunPoint"))
    monkeypatch.setattr(transfer, "_CACHE", {})
    X_tr, y_tr, _, _, info = load_dataset(DATASET)
    cfg = RunConfig(seed=0, pretrain_epochs=1, epochs=0, depth=1, data=info,
                    params={k: v for k, v in TINY.items() if k != "depth"})
    clf = MODELS["spt-transfer"].factory(cfg)
    pre = clf.pretrainer.estimator
    # The corpus is the training splits only, of both sets, in their own lengths.
    n_train = len(y_tr) + len(load_dataset("GunPoint")[1])
    assert len(transfer.corpus_series()) == n_train
    assert pre.normalize == "instance" and pre.depth == 1 and pre.d_model == 16
    assert MODELS["spt-transfer"].factory(cfg).pretrainer is clf.pretrainer  # fitted once
    clf.fit(X_tr, y_tr)  # max_epochs=0: no fine-tuning step, the encoder is the pretrainer's
    theirs = pre.encoder_.state_dict()
    for key, value in clf.encoder_.state_dict().items():
        assert torch.equal(value, theirs[key]), key
    assert clf.patch_size_ == pre.patch_size_


def test_transfer_is_skipped_on_multivariate_sets():
    info = load_dataset("BasicMotions")[-1]
    assert "univariate" in MODELS["spt-transfer"].skip_reason(info)
    assert MODELS["spt-transfer"].skip_reason(load_dataset(DATASET)[-1]) is None


def test_probe_pretrains_on_every_series_and_fits_the_ridge_on_the_labelled_ones():
    """``spt-probe``: the pretrainer sees labelled and unlabelled series (no labels); only the
    linear map is fitted on labels, on the embeddings of the labelled series."""
    from sklearn.base import BaseEstimator, TransformerMixin

    from sktspt.benchmark.labels import PretrainedProbe

    seen = []

    class Recorder(TransformerMixin, BaseEstimator):
        def fit(self, X, y=None):
            seen.append((len(X), y))
            return self

        def transform(self, X):
            return np.asarray(X)[:, 0, :4]  # the first four values: separable below

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 1, 8))
    y = np.array(["a", "b"] * 6)
    X[y == "b", 0, 0] += 5.0
    U = rng.normal(size=(30, 1, 8))
    probe = PretrainedProbe(Recorder()).fit(X, y, X_unlabeled=U)
    assert seen == [(42, None)]
    assert np.size(probe.classifier_.coef_) == 4  # four embedding features, two classes
    assert list(probe.predict(X)) == list(y)


def test_probe_model_takes_the_spt_settings_and_its_own_budget():
    info = load_dataset("ItalyPowerDemand")[4]
    cfg = RunConfig(seed=3, pretrain_epochs="auto", epochs="auto", depth=2, data=info,
                    params={"d_model": 16})
    pretrainer = MODELS["spt-probe"].factory(cfg).pretrainer
    assert (pretrainer.depth, pretrainer.d_model, pretrainer.random_state) == (2, 16, 3)
    assert pretrainer.schedule__steps == type(pretrainer)().schedule__steps
    cfg = RunConfig(seed=3, pretrain_epochs="auto", epochs="auto", depth=2, data=info,
                    params={"schedule__steps": 7})
    assert MODELS["spt-probe"].factory(cfg).pretrainer.schedule__steps == 7
