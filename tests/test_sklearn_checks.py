"""scikit-learn's own estimator checks (``parametrize_with_checks``) over every sdckit estimator.

The anonymisation methods act on categories; on the checks' numeric arrays each distinct number is
a category (PRAM, local suppression), or a number is binned (recoding) or capped (top coding).

Checks that cannot apply are declared here, through scikit-learn's ``expected_failed_checks``,
each with its reason; everything else must pass.
"""

from __future__ import annotations

import warnings
from typing import Any

from sklearn.utils.estimator_checks import parametrize_with_checks

from sdckit.anonymize import PRAM, GlobalRecoder, LocalSuppressor, TopBottomCoder
from sdckit.microagg import (
    MDAV,
    Microaggregation,
    MomentRestorer,
    PositivityRestorer,
    RestoredMicroaggregation,
)
from sdckit.spectral import AdditiveNoise, NoisyPCA

# Microaggregation releases the rows it was fitted on: fit_transform is the operation, and
# transform on any other rows raises (there is no map for a new record). Three checks transform
# rows other than the fitted ones.
ROWS_SEEN_IN_FIT = {
    "check_methods_subset_invariance": "transform on a subset of the fitted rows: microaggregation has "
    "no map for rows other than those it grouped, so transform refuses them",
    "check_methods_sample_order_invariance": "transform on the fitted rows permuted: not the rows seen in "
    "fit (same values, other order), refused for the same reason",
    "check_fit_idempotent": "transform on a held-out test set after fit on a training set: microaggregation "
    "releases the training rows only",
}

# The restorers fit on two tables, fit(original, masked) (the contract): every check that
# fits them passes a target vector y where the masked table goes, which they refuse with a message
# pointing to RestoredMicroaggregation (the one-table transformer, checked in full below).
TWO_TABLES = "fit(original, masked) takes two tables; the check passes a 1-d target y as the masked table"
_FITTING_CHECKS = [
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_dtype_object",
    "check_estimators_dtypes",
    "check_estimators_fit_returns_self",
    "check_estimators_nan_inf",
    "check_estimators_overwrite_params",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1feature",
    "check_fit2d_predict1d",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_n_features_in",
    "check_n_features_in_after_fitting",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input",
    "check_transformer_data_not_an_array",
    "check_transformer_general",
    "check_transformer_preserve_dtypes",
]
RESTORER = dict.fromkeys(_FITTING_CHECKS, TWO_TABLES)

# AdditiveNoise with a fixed random_state (tests only) draws one noise stream per transform call:
# a subset or a permutation of the rows gets the stream's first draws, not those its rows got in
# the whole call. (With random_state=None, the default, scikit-learn skips these checks itself.)
NOISE_STREAM = {
    "check_methods_subset_invariance": "a batch of rows gets the first draws of a fresh seeded stream, "
    "not the draws those rows got when the whole table was transformed",
    "check_methods_sample_order_invariance": "permuted rows get the seeded stream in the new order, so "
    "each row's noise differs from the one it got in the original order",
}

# Local suppression decides which cells of the fitted table to blank so that the whole table is
# k-anonymous: k-anonymity is a property of the table, not of a row, so the decisions are for those
# rows only and transform refuses any other table. The same three checks as microaggregation.
FITTED_TABLE_ONLY = {
    "check_methods_subset_invariance": "transform on a subset of the fitted rows: the suppressions make "
    "the whole fitted table k-anonymous and are not a map for a part of it, so transform refuses it",
    "check_methods_sample_order_invariance": "transform on the fitted rows permuted: not the table the "
    "cells were decided for (same values, other order), refused for the same reason",
    "check_fit_idempotent": "transform on a held-out test set after fit on a training set: local "
    "suppression releases the table it was fitted on; fit_transform the test set instead",
}

# PRAM redraws each cell from the row of its value in a transition matrix built in fit: a value
# not seen in fit has no row (each distinct float of the checks' tables is a category), and with
# a seed, one stream of draws per transform call (as AdditiveNoise above).
UNSEEN_CATEGORY = (
    "transform on a held-out test set: its values were not seen in fit, so they have no row in the "
    "transition matrix and PRAM refuses them rather than release them unperturbed"
)
PRAM_SEEDED = {
    "check_methods_subset_invariance": "a batch of rows gets the first draws of a fresh seeded stream, "
    "not the draws those rows got when the whole table was redrawn",
    "check_methods_sample_order_invariance": "permuted rows get the seeded stream in the new order, so "
    "each row's redrawn value differs from the one it got in the original order",
    "check_fit_idempotent": UNSEEN_CATEGORY,
}
# With random_state=None the checks that compare two draws are skipped by scikit-learn; this one
# sets random_state=0 itself, and then fails for the unseen values.
PRAM_FRESH = {"check_fit_idempotent": UNSEEN_CATEGORY}

INF = float("inf")

ESTIMATORS: list[Any] = [
    MDAV(),
    Microaggregation(method="vmdav"),
    Microaggregation(method="mdav_blocked", block_size=8),
    Microaggregation(method="rank"),
    MomentRestorer(),
    PositivityRestorer(),
    # k=2: the checks' smallest tables (10 rows x 3 columns) need >= p + 1 groups for a covariance map
    RestoredMicroaggregation(k=2),
    RestoredMicroaggregation(k=2, restorer=PositivityRestorer()),
    AdditiveNoise(),
    AdditiveNoise(distribution="laplace", random_state=0),  # deterministic: the checks that need it run
    NoisyPCA(),
    # numeric binning: every number into one of four intervals, each coded by its (numeric) label
    GlobalRecoder(rules={"x0": {"breaks": [-INF, 0, 1, 2, INF], "labels": [-0.5, 0.5, 1.5, 2.5]}}),
    TopBottomCoder(top_quantile=0.9, bottom_quantile=0.1),  # every numeric column, learned thresholds
    TopBottomCoder(top=2.0, bottom=0.5),
    # k=2: every distinct number is a category, and the checks' smallest tables have 10 rows
    LocalSuppressor(k=2),
    LocalSuppressor(k=2, method="sdcmicro", random_redaction=0.1, random_state=0),
    LocalSuppressor(k=2, random_state=0),  # decoys, seeded
    PRAM(),  # every column, each distinct number a category
    PRAM(pd=0.5, random_state=0),
]


def expected_failed_checks(estimator: Any) -> dict[str, str]:
    if isinstance(estimator, (MomentRestorer, PositivityRestorer)):
        return RESTORER
    if isinstance(estimator, (Microaggregation, RestoredMicroaggregation)):
        return ROWS_SEEN_IN_FIT
    if isinstance(estimator, AdditiveNoise) and estimator.random_state is not None:
        return NOISE_STREAM
    if isinstance(estimator, LocalSuppressor):
        return FITTED_TABLE_ONLY
    if isinstance(estimator, PRAM):
        return PRAM_FRESH if estimator.random_state is None else PRAM_SEEDED
    # NoisyPCA, AdditiveNoise() (fresh entropy), GlobalRecoder and TopBottomCoder pass every check
    return {}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks, xfail_strict=True)
def test_sklearn_compatible_estimator(estimator: Any, check: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy on the checks' degenerate tables
        check(estimator)
