"""scikit-learn's own estimator checks (2D input is univariate, so the suite applies)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sktspt import SPTClassifier, SPTPretrainer

TINY = dict(depth=1, d_model=16, n_heads=2, dim_feedforward=16, dropout=0.0, random_state=0)

EXPECTED_FAILED = {}


@parametrize_with_checks(
    [
        SPTClassifier(pretrain_epochs=2, max_epochs=30, lr=3e-3, batch_size=32, **TINY),
        SPTPretrainer(max_epochs=2, **TINY),
    ],
    expected_failed_checks=lambda est: EXPECTED_FAILED,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
