"""Feature scaling learned at ``fit`` and applied to every later input.

Linear routers and classifiers trained on raw term counts are dominated by
long documents and frequent words; the peers of LdSM (napkinXC, omikuji)
therefore normalise rows internally. :class:`FeatureScaler` does the same
inside an estimator, so that users can hand in features as they have them:

``"tfidf"``
    Sublinear term frequency ``1 + log|x|`` for ``|x| >= 1`` and ``|x|``
    itself below 1 (sign kept, so a weight in (0, 1/e) is never made
    negative; the two pieces meet with equal slope at 1), times the inverse
    document frequency ``log((1 + n) / (1 + df)) + 1`` of the training rows,
    then each row scaled to unit Euclidean norm. Features no training row
    has get weight 0: nothing was learned about them, and they would
    otherwise shrink the known features of a row by the normalisation.
``"l2"``
    Each row scaled to unit Euclidean norm.
``"auto"``
    ``"tfidf"`` when every training value is a non-negative integer (term
    counts or binary indicators, as users bring text), ``"l2"`` otherwise
    (features already weighted, such as the tf-idf files of the Extreme
    Classification Repository).
``None``
    The features as given.

The choice and the idf weights are part of the model file, so ``predict``,
``predict_file`` and a reloaded model transform new rows exactly like the
training rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import kernel_csr
from ._weighting import smoothed_idf, sublinear_tf, unit_rows
from .exceptions import ModelFormatError

__all__ = ["FEATURE_SCALINGS", "FeatureScaler", "feature_magnitude"]

#: The values of an estimator's ``feature_scaling`` parameter.
FEATURE_SCALINGS = ("auto", "tfidf", "l2", None)

#: What ``"auto"`` and the others resolve to, as stored in model files.
_RESOLVED = ("tfidf", "l2", "none")


class FeatureScaler:
    """Learn a feature scaling on training rows and apply it to any rows.

    Parameters
    ----------
    kind : {"auto", "tfidf", "l2", None}
        The scaling (see the module documentation).

    Attributes
    ----------
    kind_ : {"tfidf", "l2", "none"}
        The scaling applied, with ``"auto"`` resolved (set by :meth:`fit`).
    idf_ : numpy.ndarray of float32, shape (n_features,) or None
        Inverse document frequencies, for ``"tfidf"``.
    """

    def __init__(self, kind="auto"):
        self.kind = kind

    def fit(self, X: sp.csr_matrix) -> FeatureScaler:
        """Choose the scaling for ``X`` and learn its idf weights.

        Parameters
        ----------
        X : scipy.sparse.csr_matrix
            Checked training features (sorted, finite, without duplicates).

        Returns
        -------
        FeatureScaler
            ``self``.
        """
        kind = self.kind
        if kind == "auto":
            kind = "tfidf" if _counts(X.data) else "l2"
        self.kind_ = "none" if kind is None else kind
        self.idf_ = _idf(X) if self.kind_ == "tfidf" else None
        return self

    def transform(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Return ``X`` scaled, in the same CSR layout (a copy, unless "none").

        Parameters
        ----------
        X : scipy.sparse.csr_matrix
            Checked features, as wide as the training rows.

        Returns
        -------
        scipy.sparse.csr_matrix
            float32 values, ``X``'s index arrays (shared) and sparsity
            pattern: zeros produced by the scaling stay stored, so the
            structure checks of ``X`` still hold.
        """
        if self.kind_ == "none":
            return X
        values = X.data.astype(np.float64)
        if self.kind_ == "tfidf":
            values = np.sign(values) * sublinear_tf(np.abs(values)) * self.idf_[X.indices]
        values = unit_rows(values, X.indptr)
        return kernel_csr(values.astype(np.float32), X.indices, X.indptr, X.shape)

    def get_state(self) -> tuple[dict, dict]:
        """The scaling as model-file parameters and arrays (``scaling/idf``)."""
        arrays = {} if self.idf_ is None else {"scaling/idf": self.idf_}
        return {"kind": self.kind_}, arrays

    @classmethod
    def from_state(cls, params, arrays: dict, n_features: int) -> FeatureScaler:
        """Rebuild a fitted scaler from :meth:`get_state` output.

        Raises
        ------
        ModelFormatError
            On an unknown kind, or idf weights that are missing, of the wrong
            shape or type, negative or not finite.
        """
        kind = params.get("kind") if isinstance(params, dict) else None
        if kind not in _RESOLVED:
            raise ModelFormatError(f"feature scaling: unknown kind {kind!r}")
        scaler = cls(None if kind == "none" else kind)
        scaler.kind_, scaler.idf_ = kind, None
        if kind == "tfidf":
            idf = arrays.get("scaling/idf")
            if (not isinstance(idf, np.ndarray) or idf.dtype != np.float32
                    or idf.shape != (n_features,) or not np.all(np.isfinite(idf))
                    or np.any(idf < 0)):
                raise ModelFormatError("feature scaling: idf weights missing or invalid")
            scaler.idf_ = idf
        elif "scaling/idf" in arrays:
            raise ModelFormatError(f"feature scaling: {kind!r} stores no idf weights")
        return scaler


def feature_magnitude(X: sp.csr_matrix, kind: str) -> float:
    """The scale of features fitted with scaling `kind`, for scale-free weight thresholds.

    A router trained on features ``c`` times larger needs weights ``c``
    times smaller, so a fixed threshold on weight magnitudes would drop
    all of them (values around 100: trees of one node). Scaled rows
    (``"tfidf"``, ``"l2"``) are the scale the thresholds are set for: 1.
    Features as given (``"none"``): the root mean square of the non-zero
    values, rounded to the nearest power of two, so that binary features
    and values within a factor sqrt(2) of 1 keep the threshold exactly, and
    dividing by it is exact.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        Checked training features, after the scaling.
    kind : {"tfidf", "l2", "none"}
        The resolved scaling (``FeatureScaler.kind_``).

    Returns
    -------
    float
        A power of two (1.0 for scaled or empty features).
    """
    if kind != "none" or not X.data.size:
        return 1.0
    root_mean_square = np.sqrt(np.mean(np.square(X.data, dtype=np.float64)))
    return float(2.0 ** round(np.log2(root_mean_square))) if root_mean_square > 0 else 1.0


def _counts(values: np.ndarray) -> bool:
    """Whether every value is a non-negative integer (counts or 0/1)."""
    return bool(np.all(values >= 0) and np.all(values == np.floor(values)))


def _idf(X: sp.csr_matrix) -> np.ndarray:
    """Smoothed inverse document frequency of every column; 0 where df = 0."""
    df = np.bincount(X.indices, minlength=X.shape[1]).astype(np.float64)
    idf = smoothed_idf(df, X.shape[0])
    idf[df == 0] = 0.0
    return idf.astype(np.float32)
