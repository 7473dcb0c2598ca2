"""Tail classifiers for re-ranking: a score per (point, candidate label) pair.

Used by :class:`xmltree.rerank.Reranker`, which blends their scores with a
base model's; both need few examples per label to be useful, which is what
tail labels have.

:class:`TailScorer` (PfastreXML's, Jain, Prabhu & Varma, KDD 2016)
    Distance of the unit-normalised point to the centroid of the training
    points carrying the label, ``t_l(x) = 1 / (1 + exp(gamma ||x_hat - mu_l||^2))``,
    through sparse dot products: any number of features and labels.
:class:`RidgeTailScorer`
    One-vs-rest ridge regression, fitted in closed form with dense
    ``n_features x n_labels`` weights: for up to a few thousand features.
:class:`LogisticTailScorer`
    One-vs-rest L2-regularised logistic regression, fitted by preconditioned
    L-BFGS; dense like ridge, and the two share everything but the fit and
    the map from linear to log score (:class:`_LinearTailScorer`).

All weight features by their IDF before rows are unit-normalised (or not,
``feature_weighting="none"``) and store their arrays under ``STATE_PREFIX``
names so that an estimator can keep them beside its own in one model file.
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp
import scipy.special

from .._base import check_bool, check_choice, check_int, check_real
from .._validation import check_csr_structure, check_features, check_labels
from .._weighting import smoothed_idf
from ..exceptions import DataFormatError, ModelFormatError, NotFittedError
from . import _rerank

__all__ = ["TailScorer", "RidgeTailScorer", "LogisticTailScorer"]

logger = logging.getLogger(__name__)

#: Feature weightings accepted by :class:`TailScorer` and :class:`Reranker`.
FEATURE_WEIGHTINGS = ("idf", "none")

#: Largest dense arrays :class:`RidgeTailScorer` and :class:`LogisticTailScorer`
#: may need to fit, in bytes.
MAX_DENSE_BYTES = 2**31

#: Correction pairs kept by :class:`LogisticTailScorer`'s L-BFGS.
_LBFGS_MEMORY = 10

#: Floor of a ridge score before its log is blended, as least-squares outputs
#: may be 0 or negative. Uncritical: on Delicious's held-out rows, floors from
#: 1e-5 to 1e-2 gave the same best settings and scores.
RIDGE_FLOOR = 1e-4

#: Scores computed at once (rows x labels) by the linear scorers' ``_log_score``
#: and by each block of :class:`LogisticTailScorer`'s objective.
_SCORE_BLOCK = 2**22

#: Prefix of the array names in :meth:`Reranker._get_state`, so that an
#: estimator can store the re-ranker's arrays beside its own in one file.
STATE_PREFIX = "rerank."


# ----------------------------------------------------------------------------- checks


def _check_candidate_labels(labels, n_labels: int | None = None) -> np.ndarray:
    """Return candidate ids as a C int32 array: label ids in ``[0, n_labels)`` or -1."""
    labels = np.asarray(labels)
    if labels.ndim != 2:
        raise DataFormatError(f"labels: expected a 2-D array, got {labels.ndim}-D")
    if labels.size and not np.issubdtype(labels.dtype, np.integer):
        raise DataFormatError(f"labels: expected integer label ids, got dtype {labels.dtype}")
    if labels.size and labels.min() < -1:
        raise DataFormatError("labels: ids must be >= 0, or -1 for an empty slot")
    limit = np.iinfo(np.int32).max + 1 if n_labels is None else n_labels
    if labels.size and labels.max() >= limit:
        raise DataFormatError(f"labels: id {int(labels.max())} out of range [0, {limit})")
    return np.ascontiguousarray(labels, dtype=np.int32)


# ----------------------------------------------------------------------------- scorers


def _unit_rows(matrix) -> sp.csr_matrix:
    """Return `matrix` (sparse) with each non-zero row scaled to unit L2 norm.

    In float32 by a diagonal product, not ``xmltree._weighting.unit_rows``
    (float64): the re-rankers of existing model files score with these bits.
    """
    matrix = sp.csr_matrix(matrix)
    row_norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1), dtype=np.float64).ravel())
    inverse_norms = np.divide(1.0, row_norms, out=np.zeros_like(row_norms), where=row_norms > 0)
    return sp.csr_matrix(sp.diags(inverse_norms.astype(np.float32)) @ matrix)


def _feature_weights(X: sp.csr_matrix, feature_weighting: str) -> np.ndarray:
    """Per-feature factors (float32): smoothed IDF of the training rows, or ones."""
    if feature_weighting == "none":
        return np.ones(X.shape[1], dtype=np.float32)
    document_frequency = np.bincount(X.indices, minlength=X.shape[1])
    return smoothed_idf(document_frequency, X.shape[0]).astype(np.float32)


class _Scorer:
    """What the tail scorers share: fitted check and ``score`` from ``_log_score``."""

    def _check_fitted(self) -> None:
        if not hasattr(self, "feature_weights_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, Y) first"
            )

    def score(self, X, labels) -> np.ndarray:
        """Return the tail score of each row's candidate labels.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Points to score.
        labels : array-like of shape (n_samples, n_candidates), int
            Label ids per row, -1 for an empty slot.

        Returns
        -------
        numpy.ndarray of shape (n_samples, n_candidates), float64
            Scores, 0 in empty slots; finite for rows with no feature and for
            labels never seen in training.
        """
        self._check_fitted()
        labels = _check_candidate_labels(labels, self.n_labels_)
        return np.exp(self._log_score(check_points(X, labels, self.n_features_), labels))


def check_training_data(X, Y, n_labels: int | None = None) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Check the training data of a tail scorer or re-ranker, once."""
    X = check_features(X)
    return X, check_labels(Y, n_samples=X.shape[0], n_labels=n_labels)


def check_points(X, labels: np.ndarray, n_features: int) -> sp.csr_matrix:
    """Check the points whose candidate `labels` are scored, once."""
    X = check_features(X, n_features=n_features)
    check_rows_match(X, labels)
    return X


def check_rows_match(X: sp.csr_matrix, labels: np.ndarray) -> None:
    """One row of candidates per point."""
    if X.shape[0] != labels.shape[0]:
        raise DataFormatError(f"labels: has {labels.shape[0]} rows but X has {X.shape[0]}")


class TailScorer(_Scorer):
    """Nearest-centroid classifier per label, used to rescue tail labels.

    Parameters
    ----------
    gamma : float, default=2.0
        Sharpness of ``t_l(x) = 1 / (1 + exp(gamma * ||x_hat - mu_l||^2))``;
        larger values trust only candidates very close to their centroid.
    feature_weighting : {"idf", "none"}, default="idf"
        Scale each feature by its smoothed inverse document frequency in the
        training rows, ``1 + log((1 + n) / (1 + df_f))``, before rows are
        unit-normalised (both in training and when scoring), or leave the
        features as they are.
    unit_centroids : bool, default=True
        Unit-normalise each centroid, making ``||x_hat - mu_l||^2`` equal to
        ``2 - 2 cos(x, mu_l)``; otherwise ``mu_l`` is the plain mean.

    Attributes
    ----------
    centroids_ : scipy.sparse.csr_matrix of shape (n_labels, n_features), float32
        ``mu_l``: mean of the weighted, unit-L2-normalised training rows
        carrying label ``l`` (unit-normalised if `unit_centroids`); an empty
        row for a label never seen in training.
    feature_weights_ : numpy.ndarray of shape (n_features,), float32
        The factor applied to each feature (all 1 without weighting).
    label_counts_ : numpy.ndarray of shape (n_labels,), int64
        Training rows per label.
    n_features_, n_labels_ : int
        Dimensions seen in :meth:`fit`.
    """

    def __init__(
        self, gamma: float = 2.0, feature_weighting: str = "idf", unit_centroids: bool = True
    ):
        self.gamma = check_real("gamma", gamma, 0.0, strict=True)
        self.feature_weighting = check_choice("feature_weighting", feature_weighting,
                                              FEATURE_WEIGHTINGS)
        self.unit_centroids = check_bool("unit_centroids", unit_centroids)

    def fit(self, X, Y, n_labels: int | None = None) -> TailScorer:
        """Compute the label centroids.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training features; rows with no feature contribute zero vectors.
        Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
            Training labels.
        n_labels : int, optional
            Size of the label space, if larger than ``Y`` shows (e.g. the
            base model's); extra labels get empty centroids.

        Returns
        -------
        TailScorer
            ``self``.
        """
        return self._fit(*check_training_data(X, Y, n_labels))

    def _fit(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> TailScorer:
        """:meth:`fit` on data :func:`check_training_data` returned."""
        weights = _feature_weights(X, self.feature_weighting)
        X_unit = _unit_rows(X @ sp.diags(weights))
        counts = np.diff(Y.tocsc().indptr).astype(np.int64)
        inverse_counts = np.divide(1.0, counts, out=np.zeros(counts.shape), where=counts > 0)
        centroids = sp.diags(inverse_counts.astype(np.float32)) @ (Y.T.tocsr() @ X_unit)
        if self.unit_centroids:
            centroids = _unit_rows(centroids)
        self._set_centroids(sp.csr_matrix(centroids, dtype=np.float32), counts, weights)
        logger.debug(
            "fitted %d label centroids (%d stored values)", counts.size, self.centroids_.nnz
        )
        return self

    def _set_centroids(
        self, centroids: sp.csr_matrix, counts: np.ndarray, feature_weights: np.ndarray
    ) -> None:
        """Install centroids in the layout the kernel reads and cache their norms."""
        self.feature_weights_ = np.ascontiguousarray(feature_weights, dtype=np.float32)
        centroids.sum_duplicates()
        centroids.sort_indices()
        centroids.indices = centroids.indices.astype(np.int32, copy=False)
        centroids.indptr = centroids.indptr.astype(np.int64, copy=False)
        self.centroids_ = centroids
        self.label_counts_ = counts
        self.n_labels_, self.n_features_ = centroids.shape
        # The kernel also walks centroids feature by feature (see _rerank).
        by_feature = centroids.tocsc()
        by_feature.sort_indices()
        self._centroids_by_feature = (
            by_feature.indptr.astype(np.int64),
            by_feature.indices.astype(np.int32),
            by_feature.data,
        )
        row_of_value = np.repeat(np.arange(self.n_labels_), np.diff(centroids.indptr))
        self._centroid_sq_norms = np.bincount(
            row_of_value,
            weights=centroids.data.astype(np.float64) ** 2,
            minlength=self.n_labels_,
        ).astype(np.float64)  # bincount of nothing is int64

    def _log_score(self, X: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
        """``log t_l(x)`` of checked points and int32 candidate ids; -inf in empty slots."""
        centroids = self.centroids_
        return _rerank.tail_log_scores(
            X.indptr,
            X.indices,
            X.data,
            centroids.indptr,
            centroids.indices,
            centroids.data,
            *self._centroids_by_feature,
            self._centroid_sq_norms,
            self.feature_weights_,
            labels,
            self.gamma,
        )

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The arrays that define the fitted scorer, by state name."""
        return {
            "centroid_indptr": self.centroids_.indptr,
            "centroid_indices": self.centroids_.indices,
            "centroid_data": self.centroids_.data,
            "label_counts": self.label_counts_,
            "feature_weights": self.feature_weights_,
        }

    def _load_arrays(self, arrays: dict, n_features: int, n_labels: int) -> None:
        """Install :meth:`_state_arrays` output read from a file, checking it."""
        indptr = _state_array(arrays, "centroid_indptr", np.int64, (n_labels + 1,))
        indices = _state_array(arrays, "centroid_indices", np.int32, None)
        data = _state_array(arrays, "centroid_data", np.float32, indices.shape)
        counts = _state_array(arrays, "label_counts", np.int64, (n_labels,))
        weights = _state_feature_weights(arrays, n_features)
        try:
            check_csr_structure(indptr, indices, (n_labels, n_features), "re-ranker centroids")
        except DataFormatError as exc:
            raise ModelFormatError(str(exc)) from exc
        if not np.all(np.isfinite(data)) or np.any(counts < 0):
            raise ModelFormatError("re-ranker centroids: non-finite values or negative counts")
        self._set_centroids(
            sp.csr_matrix((data, indices, indptr), shape=(n_labels, n_features)), counts, weights
        )


class _LinearTailScorer(_Scorer):
    """What the dense one-vs-rest linear scorers share; subclasses fit and link.

    A subclass fits ``W`` (``(n_features + 1) x n_labels``, biases last) in
    :meth:`_solve`, maps a linear score ``z = [x_hat 1] . W_l`` to its log
    score in :meth:`_log_link`, says how many bytes of dense arrays its fit
    needs in :meth:`_dense_bytes`, and names its kind (``_KIND``, as
    ``tail_scorer``) and its stored weights (``_COEF_NAME``).
    """

    _KIND = ""
    _COEF_NAME = ""

    def __init__(self, penalty: float = 1.0, feature_weighting: str = "idf"):
        self.penalty = check_real("penalty", penalty, 0.0, strict=True)
        self.feature_weighting = check_choice("feature_weighting", feature_weighting,
                                              FEATURE_WEIGHTINGS)

    def fit(self, X, Y, n_labels: int | None = None):
        """Fit the weights of every label.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training features.
        Y : indicator matrix of shape (n_samples, n_labels) or list of label lists
            Training labels.
        n_labels : int, optional
            Size of the label space, if larger than ``Y`` shows; extra labels
            are treated as labels never seen in training.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If the dense arrays of the fit would exceed ``MAX_DENSE_BYTES``.
        """
        return self._fit(*check_training_data(X, Y, n_labels))

    def _fit(self, X: sp.csr_matrix, Y: sp.csr_matrix):
        """:meth:`fit` on data :func:`check_training_data` returned."""
        n_features, n_labels = X.shape[1], Y.shape[1]
        needed = self._dense_bytes(n_features + 1, n_labels)
        if needed > MAX_DENSE_BYTES:
            raise ValueError(
                f"tail_scorer={self._KIND!r} needs {needed / 2**30:.1f} GiB of dense matrices "
                f"for {n_features} features and {n_labels} labels (limit "
                f"{MAX_DENSE_BYTES / 2**30:.0f} GiB); use tail_scorer='centroid'"
            )
        weights = _feature_weights(X, self.feature_weighting)
        A = sp.hstack([_unit_rows(X @ sp.diags(weights)), np.ones((X.shape[0], 1))], "csr")
        self._set_coef(self._solve(A, sp.csr_matrix(Y)).astype(np.float32), weights)
        return self

    @staticmethod
    def _dense_bytes(n_columns: int, n_labels: int) -> int:
        """Bytes of dense arrays the fit needs, for ``n_columns = n_features + 1``."""
        raise NotImplementedError

    def _solve(self, A: sp.csr_matrix, Y: sp.csr_matrix) -> np.ndarray:
        """``W`` (``A.shape[1] x n_labels``) for the ``[x_hat 1]`` training rows `A`."""
        raise NotImplementedError

    @staticmethod
    def _log_link(scores: np.ndarray) -> np.ndarray:
        """The log score of float64 linear scores ``z``."""
        raise NotImplementedError

    def _set_coef(self, coef: np.ndarray, feature_weights: np.ndarray) -> None:
        self.coef_ = np.ascontiguousarray(coef)
        self.feature_weights_ = np.ascontiguousarray(feature_weights, dtype=np.float32)
        self.n_features_, self.n_labels_ = coef.shape[0] - 1, coef.shape[1]

    def _log_score(self, X: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
        """The log score of checked points and int32 candidate ids; -inf in empty slots."""
        A = _unit_rows(X @ sp.diags(self.feature_weights_))
        log_scores = np.full(labels.shape, -np.inf)
        # All labels' scores for a block of rows at a time: dense, but bounded.
        block = max(1, _SCORE_BLOCK // self.n_labels_)
        for start in range(0, X.shape[0], block):
            rows = slice(start, start + block)
            scores = A[rows] @ self.coef_[:-1] + self.coef_[-1]
            picked = np.take_along_axis(scores, np.maximum(labels[rows], 0), axis=1)
            linked = self._log_link(picked.astype(np.float64))
            log_scores[rows] = np.where(labels[rows] >= 0, linked, -np.inf)
        return log_scores

    def _state_arrays(self) -> dict[str, np.ndarray]:
        """The arrays that define the fitted scorer, by state name."""
        return {self._COEF_NAME: self.coef_, "feature_weights": self.feature_weights_}

    def _load_arrays(self, arrays: dict, n_features: int, n_labels: int) -> None:
        """Install :meth:`_state_arrays` output read from a file, checking it."""
        coef = _state_array(arrays, self._COEF_NAME, np.float32, (n_features + 1, n_labels))
        if not np.all(np.isfinite(coef)):
            raise ModelFormatError(f"re-ranker {self._KIND} weights: non-finite values")
        self._set_coef(coef, _state_feature_weights(arrays, n_features))


class RidgeTailScorer(_LinearTailScorer):
    """One-vs-rest ridge regression: a linear least-squares classifier per label.

    The centroid scorer compares a point with the mean of each label's
    points; least squares also weighs features by how they co-occur, which
    tells labels with similar centroids apart. All labels are fitted at once
    in closed form,

        W = argmin ||[A 1] W - Y||^2 + penalty ||W||^2,

    with ``A`` the (IDF-weighted) unit-normalised training rows, by one dense
    ``(n_features + 1)``-square solve; the score ``r_l(x) = [x_hat 1] . W_l``
    estimates ``P(l | x)``, and is floored at ``RIDGE_FLOOR`` before its log
    enters the blend (below it a candidate is ranked by its base score and
    propensity alone). ``W`` is dense, so this scorer is for up to a few
    thousand features (Bibtex, Delicious); :meth:`fit` refuses systems
    larger than ``MAX_DENSE_BYTES``.

    Parameters
    ----------
    penalty : float > 0, default=1.0
        Ridge penalty on the weights (and bias).
    feature_weighting : {"idf", "none"}, default="idf"
        As for :class:`TailScorer`.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (n_features + 1, n_labels), float32
        ``W``; its last row holds the biases.
    feature_weights_ : numpy.ndarray of shape (n_features,), float32
    n_features_, n_labels_ : int
    """

    _KIND = "ridge"
    _COEF_NAME = "ridge_coef"

    @staticmethod
    def _dense_bytes(n_columns: int, n_labels: int) -> int:
        """The Gram matrix and right-hand sides, in float64."""
        return 8 * n_columns * (n_columns + n_labels)

    def _solve(self, A: sp.csr_matrix, Y: sp.csr_matrix) -> np.ndarray:
        import scipy.linalg  # only here: see _fit_logistic

        gram = (A.T @ A).toarray().astype(np.float64)
        gram[np.diag_indices_from(gram)] += self.penalty
        targets = (A.T @ Y).toarray().astype(np.float64)
        return scipy.linalg.solve(gram, targets, assume_a="pos")

    @staticmethod
    def _log_link(scores: np.ndarray) -> np.ndarray:
        """``log max(r_l(x), RIDGE_FLOOR)``: least-squares outputs may be <= 0."""
        return np.log(np.maximum(scores, RIDGE_FLOOR))


class LogisticTailScorer(_LinearTailScorer):
    """One-vs-rest L2-regularised logistic regression: a probabilistic classifier per label.

    Where ridge regression fits the 0/1 targets by least squares, which
    spends its capacity on the many easy negatives of a rare label and may
    score below 0, logistic regression models ``P(l | x)`` directly:

        W = argmin  sum_l sum_i logloss(y_il, [a_i 1] . W_l)
                    + penalty / 2 ||W without its bias row||^2,

    with ``a_i`` the (IDF-weighted) unit-normalised training rows, as for
    :class:`RidgeTailScorer`. The score is ``log sigmoid([x_hat 1] . W_l)``,
    computed without overflow, so no floor is needed: a label the model
    finds unlikely is ranked down in proportion. The biases are not
    penalised, so each label's predicted frequency matches its training
    frequency.

    A label that occurs in no training row (or in every row) has no finite
    optimal bias; it gets zero weights and the bias of its smoothed
    frequency ``(count + 0.5) / (n_samples + 1)`` instead, i.e. a small,
    finite prior score.

    All labels are fitted together by L-BFGS (:func:`scipy.optimize.minimize`)
    with float32 matrix products, in preconditioned coordinates: ``W_l =
    U diag((c_l e + penalty)**-1/2) V_l``, with ``U diag(e) U^T`` the
    eigendecomposition of ``[A 1]^T [A 1]`` and ``c_l`` the log loss's
    curvature ``f_l (1 - f_l)`` at the label's frequency ``f_l``. That is the
    Hessian of each label's objective if all its predictions were ``f_l``,
    so the frequent labels' steep directions and the rare labels' flat ones
    are both rescaled to about unit curvature, and the biases start at the
    labels' log-odds, which cuts the iterations several times against an
    unpreconditioned start from zero (``benchmarks/README.md``). ``W`` is
    dense, so this scorer is, like ridge, for up to a few thousand features;
    :meth:`fit` refuses problems whose dense arrays exceed
    ``MAX_DENSE_BYTES``.

    Parameters
    ----------
    penalty : float > 0, default=1.0
        L2 penalty on the weights (not the biases).
    feature_weighting : {"idf", "none"}, default="idf"
        As for :class:`TailScorer`.
    tol : float in (0, 1], default=1e-3
        Stop when the largest gradient component (in the preconditioned
        coordinates) falls below `tol` times its value at the start.
    max_iter : int >= 1, default=300
        At most this many L-BFGS iterations.

    Attributes
    ----------
    coef_ : numpy.ndarray of shape (n_features + 1, n_labels), float32
        ``W``; its last row holds the biases.
    feature_weights_ : numpy.ndarray of shape (n_features,), float32
    n_features_, n_labels_ : int
    n_iter_ : int
        L-BFGS iterations of the last :meth:`fit` (0 if every label was
        degenerate, and after loading).
    """

    _KIND = "logistic"
    _COEF_NAME = "logistic_coef"

    def __init__(
        self,
        penalty: float = 1.0,
        feature_weighting: str = "idf",
        tol: float = 1e-3,
        max_iter: int = 300,
    ):
        super().__init__(penalty, feature_weighting)
        self.tol = check_real("tol", tol, 0.0, 1.0, strict=True)
        self.max_iter = check_int("max_iter", max_iter, 1)
        self.n_iter_ = 0

    @staticmethod
    def _dense_bytes(n_columns: int, n_labels: int) -> int:
        """Eigenbasis, and float64 ``(n_features + 1) x n_labels`` arrays: the weights,
        their gradient and scaling, temporaries, and L-BFGS's correction pairs."""
        return 8 * n_columns * (n_columns + (2 * _LBFGS_MEMORY + 8) * n_labels)

    def _solve(self, A: sp.csr_matrix, Y: sp.csr_matrix) -> np.ndarray:
        n_rows = A.shape[0]
        counts = np.diff(Y.tocsc().indptr)
        frequency = (counts + 0.5) / (n_rows + 1.0)
        coef = np.zeros((A.shape[1], Y.shape[1]))
        # The optimal bias of a label with zero weights, about: the starting
        # point, and the final bias of labels with no finite optimum.
        coef[-1] = np.log(frequency) - np.log1p(-frequency)
        fitted = np.flatnonzero((counts > 0) & (counts < n_rows))
        self.n_iter_ = 0
        if fitted.size:
            coef[:, fitted], self.n_iter_ = _fit_logistic(
                A, Y[:, fitted], coef[:, fitted], frequency[fitted], self.penalty,
                self.tol, self.max_iter,
            )
        return coef

    @staticmethod
    def _log_link(scores: np.ndarray) -> np.ndarray:
        """``log sigmoid(z)``, finite for every finite ``z``."""
        return scipy.special.log_expit(scores)


def _fit_logistic(A, Y, coef, frequency, penalty, tol, max_iter) -> tuple[np.ndarray, int]:
    """Minimise :class:`_LogLoss` from `coef` by preconditioned L-BFGS.

    Returns the weights (float64, shaped like `coef`) and the iterations run.
    """
    # Imported when a scorer is fitted, not with the package: SciPy's optimisers
    # and dense linear algebra take longer to import, and more memory, than the
    # rest of xmltree, and every LdSM process would pay for them.
    import scipy.linalg
    import scipy.optimize

    n_rows, n_columns = A.shape
    n_labels = Y.shape[1]
    objective = _LogLoss(A, Y, penalty)
    eigenvalues, basis = scipy.linalg.eigh((A.T @ A).toarray().astype(np.float64))
    # 1 / n_rows: the curvature of a label seen once, a floor for smoothing.
    curvature = np.maximum(frequency * (1.0 - frequency), 1.0 / n_rows)
    scale = 1.0 / np.sqrt(np.outer(np.maximum(eigenvalues, 0.0), curvature) + penalty)

    def to_coef(v: np.ndarray) -> np.ndarray:
        return basis @ (scale * v.reshape(n_columns, n_labels))

    def loss_and_gradient(v: np.ndarray) -> tuple[float, np.ndarray]:
        loss, gradient = objective(to_coef(v))
        return loss, (scale * (basis.T @ gradient)).ravel()

    start = ((basis.T @ coef) / scale).ravel()
    gtol = tol * np.abs(loss_and_gradient(start)[1]).max()
    result = scipy.optimize.minimize(
        loss_and_gradient,
        start,
        jac=True,
        method="L-BFGS-B",
        # ftol only guards against float32 rounding stalling the line search.
        options={"maxiter": max_iter, "maxcor": _LBFGS_MEMORY, "gtol": gtol, "ftol": 1e-12},
    )
    logger.debug(
        "logistic tail scorer: %d labels, %d iterations, %d evaluations (%s)",
        n_labels, result.nit, result.nfev, result.message,
    )
    return to_coef(result.x), int(result.nit)


class _LogLoss:
    """Penalised log loss of every label and its gradient, a block of rows at a time.

    Products are in float32 (twice as fast as float64, and the
    ``n_samples x n_labels`` blocks take half the memory); sums are in float64.
    """

    def __init__(self, A: sp.csr_matrix, Y: sp.csr_matrix, penalty: float):
        A = sp.csr_matrix(A, dtype=np.float32)
        Y = sp.csr_matrix(Y)
        rows_per_block = max(1, _SCORE_BLOCK // Y.shape[1])
        # Per block: its rows, and the (row, label) positions of its 1s.
        self.blocks = [
            (A[start : start + rows_per_block], Y[start : start + rows_per_block].nonzero())
            for start in range(0, A.shape[0], rows_per_block)
        ]
        self.penalty = penalty

    def __call__(self, coef: np.ndarray) -> tuple[float, np.ndarray]:
        """Return the objective at `coef` (float64, biases last) and its gradient."""
        coef32 = coef.astype(np.float32)
        loss = 0.0
        gradient = np.zeros(coef.shape)
        for rows, positives in self.blocks:
            z = rows @ coef32
            small = np.exp(-np.abs(z))
            # logloss = log(1 + exp(z)) - y z, with log(1 + exp(z)) written as
            # max(z, 0) + log1p(exp(-|z|)) so that nothing overflows.
            loss += float(
                np.log1p(small).sum(dtype=np.float64)
                + np.maximum(z, 0.0).sum(dtype=np.float64)
                - z[positives].sum(dtype=np.float64)
            )
            # d logloss / dz = sigmoid(z) - y, sigmoid in the same stable form.
            residual = np.where(z >= 0.0, np.float32(1.0), small)
            residual /= 1.0 + small
            residual[positives] -= 1.0
            gradient += rows.T @ residual
        weights = coef[:-1]
        loss += 0.5 * self.penalty * float(np.sum(weights**2))
        gradient[:-1] += self.penalty * weights
        return loss, gradient


# ----------------------------------------------------------------------------- stored state


def _state_feature_weights(arrays: dict, n_features: int) -> np.ndarray:
    """Fetch and check the stored feature weights (finite, >= 0)."""
    weights = _state_array(arrays, "feature_weights", np.float32, (n_features,))
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
        raise ModelFormatError("re-ranker feature weights: must be finite and >= 0")
    return weights


def _state_array(arrays: dict, name: str, dtype, shape) -> np.ndarray:
    """Fetch ``STATE_PREFIX + name`` with exactly `dtype` and `shape` (None: any 1-D)."""
    key = STATE_PREFIX + name
    if key not in arrays:
        raise ModelFormatError(f"re-ranker array {key!r} is missing")
    array = np.asarray(arrays[key])
    if array.dtype != dtype or (array.ndim != 1 if shape is None else array.shape != shape):
        raise ModelFormatError(
            f"re-ranker array {key!r} has dtype {array.dtype} and shape {array.shape}, "
            f"expected {np.dtype(dtype)} and {shape if shape is not None else '1-D'}"
        )
    return np.ascontiguousarray(array)
