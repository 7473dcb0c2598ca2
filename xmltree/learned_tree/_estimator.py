"""Learned M-ary trees with representation learning (Jernite et al., 2017).

A hierarchical softmax whose tree is learned together with the input
representation. The input of an example is the mean of the embeddings of its
features (words and hashed word n-grams for raw text); every internal node of
an M-ary label tree holds an M-way softmax over that representation, and the
model is trained by SGD or Adagrad on the negative log-likelihood of the
label's root-to-leaf path. With ``tree="learned"`` the tree starts as an M-ary
Huffman tree and is rebuilt ``n_tree_updates`` times during the first half of
training by the greedy AssignLabels procedure (``xmltree.label_tree``).
Baselines use the same code with a fixed tree: ``"huffman"``, ``"random"``
(balanced) and ``"flat"`` (one softmax over all labels).

Compiled kernels live in ``_learned_tree.pyx``; this module validates
parameters and data, runs the training schedule and handles persistence.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from .._base import (
    TopKEstimator,
    class_values,
    is_int,
    n_threads,
)
from .._params import check_params
from .._validation import check_features, check_labels
from ..exceptions import DataFormatError, ModelFormatError, NotFittedError
from ..text import TextVectorizer, decode_strings, encode_strings, read_labeled_text
from . import _learned_tree as _kernels
from ._params import LEARNED_TREE_PARAMS
from .label_tree import (
    LabelTree,
    balanced_depth_tree,
    flat_tree,
    huffman_tree,
    random_tree,
    reassign_tree,
)

__all__ = ["LearnedTree", "fit_text_file"]

logger = logging.getLogger(__name__)



class LearnedTree(TopKEstimator):
    """Hierarchical softmax over a learned M-ary label tree.

    Parameters
    ----------
    arity : int, default=2
        Maximum number of children per node (``M``), at most ``2**16``.
    dim : int, default=100
        Embedding dimension, at most ``2**16``.
    epochs : int, default=5
        Passes over the data, at most 10,000.
    learning_rate : float, default=0.2
        Initial step; constant for the first half of training, then
        decreased linearly to 0 (the paper's schedule, used for all trees
        and both optimizers). The default suits Adagrad; SGD wants larger
        steps (0.5 in ``benchmarks/``). At most ``1e6``; training that
        diverges (NaN or infinite parameters, as SGD does with too large a
        step) stops with a ``ValueError``.
    optimizer : {"adagrad", "sgd"}, default="adagrad"
        Adagrad (the paper's choice for its language models): every
        parameter's step is divided by the root of the sum of its squared
        gradients so far, for the node softmaxes and for the embedding rows
        an example touches; or plain SGD. Adagrad at step 0.2 beats SGD at
        step 0.5 for every tree, but not for a flat softmax over a large
        vocabulary (``benchmarks/README.md``). The running sums live only
        during ``fit``; they are not saved with the model.
    tree : {"learned", "huffman", "random", "flat"}, default="learned"
        The label tree. ``"learned"`` starts from Huffman's tree and
        re-assigns labels from the training statistics. ``"huffman"`` is
        the fixed M-ary Huffman tree of the label frequencies. It keeps the
        most frequent labels near the root. When a few labels dominate and
        many inputs carry little evidence, that is about as good as
        learning; elsewhere the learned tree is ahead (Reuters-21578 and
        CLINC150 in ``benchmarks/README.md``). Compare the two on held-out
        rows.
        ``"random"`` is a random balanced tree, and ``"flat"`` is one
        softmax over all labels.
    n_tree_updates : int, default=50
        Number of AssignLabels passes (``tree="learned"`` only), spread
        evenly over the first half of training; at most 10,000.
    max_depth : int, optional
        Depth-constrained mode (supplement, Algorithm 3): all leaves at depth
        <= max_depth (at most 64); the initial tree is random and balanced.
        Needs ``n_labels <= arity ** max_depth``; for ``"learned"`` and
        ``"random"``.
    objective : {"classification", "likelihood"}, default="classification"
        Which gradient of J_n drives AssignLabels: eq. 10 (classification)
        or eq. 12 (density estimation, e.g. language modelling).
    ngrams, buckets, min_count : int
        Text features (see :class:`xmltree.text.TextVectorizer`); used only
        when ``fit`` receives raw documents. ``ngrams`` is at most 64,
        ``buckets`` at most ``2**31 - 1``.
    n_jobs : int or None, default=1
        Threads, with joblib's convention (``None``: 1, ``-1``: all cores);
        at most ``2**16`` in absolute value, and at most twice the cores are
        started.
        With more than one, training is Hogwild (lock-free shared updates)
        and not bit-reproducible; with one it is, for a given
        ``random_state``. Prediction gives the same results whatever it is.
    random_state : int, optional

    Attributes
    ----------
    classes_ : numpy.ndarray
        Label values, int64 or strings; label index ``i`` in the tree stands
        for ``classes_[i]``.
    n_features_in_ : int
        Width of the feature space (of the vectorizer's, when fitted on text).
    tree_ : xmltree.label_tree.LabelTree
        The (final) label tree.
    vectorizer_ : TextVectorizer or None
        Set when fitted on raw text.
    embeddings_, weights_, biases_ : numpy.ndarray
        Parameters (n_features, dim), (n_nodes, arity, dim), (n_nodes, arity).
    label_counts_ : numpy.ndarray
        Training frequency of every label.
    train_loss_ : list of float
        Mean path negative log-likelihood of each training segment.
    """

    _KIND = "learned_tree"
    #: scikit-learn tags: non-negative features, or raw documents.
    _TAGS = {"requires_positive_X": True, "X_types": ["2darray", "sparse", "string"]}

    def __init__(self, arity: int = 2, dim: int = 100, epochs: int = 5,
                 learning_rate: float = 0.2, optimizer: str = "adagrad", tree: str = "learned",
                 n_tree_updates: int = 50, max_depth: int | None = None,
                 objective: str = "classification", ngrams: int = 1, buckets: int = 2_000_000,
                 min_count: int = 1, n_jobs: int = 1, random_state: int | None = None):
        self.arity = arity
        self.dim = dim
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.tree = tree
        self.n_tree_updates = n_tree_updates
        self.max_depth = max_depth
        self.objective = objective
        self.ngrams = ngrams
        self.buckets = buckets
        self.min_count = min_count
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------
    # Validation
    # ------------------------------------------------------------------

    def _validate_params(self) -> dict:
        """Check every hyper-parameter, in one place, before any work; return them."""
        check_params(LEARNED_TREE_PARAMS, self.get_params())
        if self.max_depth is not None and self.tree not in ("learned", "random"):
            raise ValueError(f"max_depth applies to tree='learned' or 'random', "
                             f"not {self.tree!r}")
        return self.get_params()

    def _features(self, X, fitting: bool) -> sp.csr_matrix:
        """Raw documents or a feature matrix -> validated CSR for the kernels."""
        if _is_text(X):
            if fitting:
                self.vectorizer_ = TextVectorizer(self.ngrams, self.buckets, self.min_count)
                X = self.vectorizer_.fit_transform(list(X))
            elif self.vectorizer_ is None:
                raise DataFormatError("X: the model was fitted on a feature matrix, not on text")
            else:
                X = self.vectorizer_.transform(X)
        elif fitting:
            self.vectorizer_ = None
        X = check_features(X, n_features=None if fitting else self.embeddings_.shape[0])
        if X.shape[1] == 0:  # the kernels need an embedding row to point at
            raise DataFormatError("X: has no features (for text: no word occurs min_count "
                                  "times, and ngrams is 1)")
        if X.data.size and X.data.min() < 0:
            raise DataFormatError("X: feature values must be non-negative (counts or weights)")
        return X

    def _encode_labels(self, y, n_samples: int, classes=None) -> sp.csr_matrix:
        """Map ``y`` to a CSR of label indices; sets ``classes_`` when fitting.

        ``y`` is either one label per sample (integers or strings) or label
        sets (indicator matrix, list of integer lists, or lists of names, each
        name counted once per row); rows with several labels train on one of
        them, drawn anew at every visit. ``classes`` (the label values, or the
        number of label ids for label sets) may add labels that never occur
        in ``y``.
        """
        if _is_label_sets(y) and _has_named_labels(y):
            names = np.unique(np.asarray([label for row in y for label in row]))
            self.classes_ = names if classes is None else np.unique(_class_values(classes,
                                                                                  "classes"))
            ids = [self._label_indices(np.unique(np.asarray(list(row)))) for row in y]
            Y = check_labels(ids, n_samples=n_samples, n_labels=self.classes_.shape[0])
        elif _is_label_sets(y):
            n_labels = None if classes is None else int(classes)
            Y = check_labels(y, n_samples=n_samples, n_labels=n_labels)
            self.classes_ = np.arange(Y.shape[1], dtype=np.int64)
        else:
            values = _class_values(y, "y")
            if values.ndim != 1 or values.shape[0] != n_samples:
                raise DataFormatError(f"y: expected {n_samples} labels, got shape {values.shape}")
            if classes is None:
                self.classes_, codes = np.unique(values, return_inverse=True)
            else:
                self.classes_ = np.unique(_class_values(classes, "classes"))
                codes = self._label_indices(values)
            Y = sp.csr_matrix((np.ones(n_samples, dtype=np.float32), codes.astype(np.int32),
                               np.arange(n_samples + 1, dtype=np.int64)),
                              shape=(n_samples, self.classes_.shape[0]))
            # scipy may shrink the index dtypes; the kernels read int64 / int32.
            Y.indptr = Y.indptr.astype(np.int64, copy=False)
            Y.indices = Y.indices.astype(np.int32, copy=False)
        empty = np.flatnonzero(np.diff(Y.indptr) == 0)
        if empty.size:
            raise DataFormatError(f"y: row {int(empty[0])} has no label")
        return Y

    def _label_indices(self, y) -> np.ndarray:
        """Map one label per sample to indices into ``classes_``."""
        values = np.asarray(y)
        if values.ndim != 1:
            raise DataFormatError("y: expected one label per sample")
        codes = np.searchsorted(self.classes_, values)
        codes = np.minimum(codes, self.classes_.shape[0] - 1)
        unknown = np.flatnonzero(self.classes_[codes] != values)
        if unknown.size:
            raise DataFormatError(f"y: label {values[unknown[0]]!r} was not seen during fit")
        return codes.astype(np.int32)

    # ------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------

    def fit(self, X, y, classes=None) -> LearnedTree:
        """Train the representation, the node softmaxes and (if learned) the tree.

        Parameters
        ----------
        X : sequence of str, or array-like / sparse matrix (n_samples, n_features)
            Raw documents (one string each) or non-negative features.
        y : array-like of shape (n_samples,), or label sets
            One label per sample, or an indicator matrix / list of label-id
            lists (one label per row is sampled at every visit).
        classes : array-like or int, optional
            The full label set when some labels may not occur in ``y`` (e.g.
            a language model's vocabulary): the label values, or, for label
            sets, the number of label ids. Every class gets a leaf.

        Returns
        -------
        self
        """
        self._validate_params()
        X = self._features(X, fitting=True)
        Y = self._encode_labels(y, X.shape[0], classes)
        n_labels = Y.shape[1]
        self.label_counts_ = np.bincount(Y.indices, minlength=n_labels).astype(np.int64)
        seeds = np.random.SeedSequence(self.random_state).generate_state(4, dtype=np.uint64)
        self.tree_ = self._initial_tree(n_labels, int(seeds[0]))
        dim = self.dim
        self.embeddings_ = _kernels.uniform_matrix(X.shape[1], dim, 1.0 / dim, int(seeds[1]))
        self.weights_ = np.zeros((self.tree_.n_nodes, self.tree_.arity, dim), dtype=np.float32)
        self.biases_ = np.zeros((self.tree_.n_nodes, self.tree_.arity), dtype=np.float32)
        self.train_loss_ = []
        try:
            self._train(X, Y, int(seeds[2]))
        except ValueError:
            del self.tree_  # diverged: no half-trained model is left to save
            raise
        return self

    def _initial_tree(self, n_labels: int, seed: int) -> LabelTree:
        if self.tree == "flat":
            return flat_tree(n_labels)
        if self.max_depth is not None:
            return balanced_depth_tree(n_labels, self.arity, self.max_depth, seed)
        if self.tree == "random":
            return random_tree(n_labels, self.arity, seed)
        return huffman_tree(self.label_counts_, self.arity)

    def _model_arrays(self) -> tuple:
        tree = self.tree_
        return (self.embeddings_, self.weights_, self.biases_, tree.children,
                tree.path_nodes, tree.path_slots, tree.label_depth)

    def _segments(self, n_samples: int) -> list[tuple[int, int, bool]]:
        """Cut training into (start, end, update tree after) example-visit ranges.

        Cuts fall at epoch ends (a new shuffle) and, for a learned tree, at
        ``n_tree_updates`` evenly spaced points of the first half.
        """
        total = self.epochs * n_samples
        cuts = {e * n_samples for e in range(1, self.epochs + 1)}
        updates = set()
        if self.tree == "learned":
            updates = {round(total * (u + 1) / (2 * self.n_tree_updates))
                       for u in range(self.n_tree_updates)} - {0}
        cuts |= updates
        points = sorted(cuts)
        starts = [0] + points[:-1]
        return [(a, b, b in updates) for a, b in zip(starts, points) if b > a]

    def _train(self, X: sp.csr_matrix, Y: sp.csr_matrix, seed: int) -> None:
        n = X.shape[0]
        total = self.epochs * n
        stats = self._new_stats() if self.tree == "learned" else None
        squares = None
        if self.optimizer == "adagrad":
            squares = tuple(np.zeros_like(values) for values in self._model_arrays()[:3])
        order, epoch = None, -1
        for start, end, update in self._segments(n):
            if start // n != epoch:
                epoch = start // n
                order = _kernels.random_permutation(n, seed + epoch)
            lo, hi = start - epoch * n, end - epoch * n
            loss = _kernels.train_epoch_part(
                self._model_arrays(), X, Y, order[lo:hi],
                float(self.learning_rate), start / total, end / total, stats,
                n_threads(self.n_jobs), seed ^ (start * 0x9E3779B9 + 1), squares)
            if not np.isfinite(loss):
                self._diverged(f"examples {start}-{end} of {total}")
            self.train_loss_.append(loss / max(hi - lo, 1))
            logger.info("examples %d-%d of %d: mean path NLL %.4f", start, end, total,
                        self.train_loss_[-1])
            if update:
                stats, squares = self._update_tree(stats, squares)
        # The last steps may have overflowed parameters no loss has read yet.
        if not all(np.all(np.isfinite(values)) for values in self._model_arrays()[:3]):
            self._diverged("the last steps")

    def _diverged(self, where: str) -> None:
        """Stop a training run whose parameters became NaN or infinite."""
        raise ValueError(
            f"LearnedTree training diverged (NaN or infinite parameters in {where}) with "
            f"optimizer={self.optimizer!r}, learning_rate={self.learning_rate}: lower "
            "learning_rate" + (", or use optimizer='adagrad'" if self.optimizer == "sgd" else ""))

    def _new_stats(self) -> tuple[np.ndarray, np.ndarray]:
        shape = (self.tree_.n_labels, self.tree_.max_depth)
        return (np.zeros(shape + (self.tree_.arity,), dtype=np.float32),
                np.zeros(shape, dtype=np.float32))

    def _update_tree(self, stats, squares=None):
        """Re-assign labels (AssignLabels from the root) and carry parameters over.

        Returns the statistics and the Adagrad accumulators ``squares`` (if
        any) for the new tree; node accumulators move with their parameters.
        """
        old = self.tree_
        new, source = reassign_tree(old, stats[0], stats[1], max_depth=self.max_depth,
                                    log_gradient=self.objective == "likelihood")
        self.weights_ = _carry_parameters(self.weights_, old, new, source)
        self.biases_ = _carry_parameters(self.biases_, old, new, source)
        if squares is not None:
            squares = (squares[0],) + tuple(_carry_parameters(values, old, new, source)
                                            for values in squares[1:])
        self.tree_ = new
        # Statistics stay valid for a (label, depth) whose node is unchanged.
        sum_probas, counts = self._new_stats()
        depth = min(old.max_depth, new.max_depth)
        old_nodes = old.path_nodes[:, :depth]
        new_nodes = new.path_nodes[:, :depth]
        inherited = source[np.maximum(new_nodes, 0)]
        same = (old_nodes >= 0) & (new_nodes >= 0) & (inherited == old_nodes)
        counts[:, :depth][same] = stats[1][:, :depth][same]
        sum_probas[:, :depth][same] = stats[0][:, :depth][same]
        return (sum_probas, counts), squares

    # ------------------------------------------------------------------
    # Prediction and scoring
    # ------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "tree_"):
            raise NotFittedError("this LearnedTree is not fitted; call fit first")

    @property
    def n_features_in_(self) -> int:
        """Width of the feature space (of the vectorizer's, when fitted on text)."""
        return self.embeddings_.shape[0]

    def _validate_X(self, X) -> sp.csr_matrix:
        return self._features(X, fitting=False)

    def _predict_top_k(self, X: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Labels (values of ``classes_``) and probabilities of checked samples.

        Uses branch-and-bound depth-first search: a subtree whose path
        probability is below the k-th best label found so far is skipped.
        """
        indices, log_proba = self._top_k_indices(X, k)
        return class_values(self.classes_, indices), np.exp(log_proba)

    def _top_k_indices(self, X: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Label indices (int32, -1 past ``n_labels``) and log-probabilities (float64)."""
        return _kernels.predict_top_k(self._model_arrays(), X, k, n_threads(self.n_jobs))

    def predict(self, X, k: int = 1) -> np.ndarray:
        """Return the k most likely labels (values of ``classes_``), shape (n_samples, k)."""
        return self.predict_top_k(X, k)[0]

    def predict_log_proba(self, X) -> np.ndarray:
        """Return log p(label | x) for every label, shape (n_samples, n_labels).

        Dense; meant for small label sets (use :meth:`log_likelihood` or
        :meth:`predict_top_k` otherwise).
        """
        self._check_fitted()
        return _kernels.all_log_proba(self._model_arrays(), self._validate_X(X),
                                      self.tree_.node_order, self.tree_.n_labels,
                                      n_threads(self.n_jobs))

    def log_likelihood(self, X, y) -> np.ndarray:
        """Return log p(y_i | x_i) of every sample (one label per sample)."""
        self._check_fitted()
        rows = self._validate_X(X)
        targets = self._label_indices(y)
        if targets.shape[0] != rows.shape[0]:
            raise DataFormatError(f"y: has {targets.shape[0]} labels but X has "
                                  f"{rows.shape[0]} rows")
        return _kernels.log_likelihood(self._model_arrays(), rows, targets,
                                       n_threads(self.n_jobs))

    def score(self, X, y) -> float:
        """Return the mean log-likelihood of ``y`` given ``X`` (higher is better)."""
        return float(np.mean(self.log_likelihood(X, y)))

    def perplexity(self, X, y) -> float:
        """Return ``exp(-mean log-likelihood)``, e.g. word perplexity for LM data."""
        return float(np.exp(-self.score(X, y)))

    def describe_tree(self, max_labels: int = 4, max_nodes: int = 50) -> str:
        """Text view of the tree: per node, its most frequent labels (cf. Figure 3)."""
        self._check_fitted()
        names = [str(c) for c in self.classes_]
        return self.tree_.describe(names, max_labels, self.label_counts_, max_nodes)

    # ------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------

    def _get_state(self) -> tuple[dict, dict]:
        """Return ``(params, arrays)`` describing the fitted model (no pickle)."""
        self._check_fitted()
        params = self._json_params()
        params["max_depth"] = None if self.max_depth is None else int(self.max_depth)
        params["learning_rate"] = float(self.learning_rate)
        arrays = {"embeddings": self.embeddings_, "weights": self.weights_,
                  "biases": self.biases_, "children": self.tree_.children,
                  "label_counts": self.label_counts_}
        if self.classes_.dtype.kind in "iu":
            params["classes_kind"] = "int"
            arrays["classes"] = self.classes_.astype(np.int64)
        else:
            params["classes_kind"] = "str"
            data, offsets = encode_strings([str(c) for c in self.classes_])
            arrays["classes_data"], arrays["classes_offsets"] = data, offsets
        params["has_vectorizer"] = self.vectorizer_ is not None
        if self.vectorizer_ is not None:
            vec_params, vec_arrays = self.vectorizer_._get_state()
            params["vectorizer"] = vec_params
            arrays.update({f"vectorizer_{k}": v for k, v in vec_arrays.items()})
        return params, arrays

    @classmethod
    def _from_state(cls, params: dict, arrays: dict) -> LearnedTree:
        """Rebuild a fitted model, checking every array before kernels see it.

        Raises
        ------
        ModelFormatError
            On missing, mistyped, mis-shaped or out-of-range content.
        """
        try:
            # Files written before the optimizer option was added trained with SGD.
            params = {"optimizer": "sgd", **params}
            model = cls(**{name: params[name] for name in cls._param_names()})
            model._validate_params()
            classes = _load_classes(params, arrays)
            embeddings = _array(arrays, "embeddings", np.float32, 2)
            weights = _array(arrays, "weights", np.float32, 3)
            biases = _array(arrays, "biases", np.float32, 2)
            children = _array(arrays, "children", np.int32, 2)
            counts = _array(arrays, "label_counts", np.int64, 1)
            n_nodes, arity = children.shape
            if weights.shape != (n_nodes, arity, embeddings.shape[1]) \
                    or biases.shape != (n_nodes, arity) or counts.shape != classes.shape:
                raise ValueError("parameter shapes disagree with the tree")
            if embeddings.shape[1] != model.dim or n_nodes < 1:
                raise ValueError("embedding dimension disagrees with dim")
            if embeddings.shape[0] < 1:
                raise ValueError("embeddings must have a row per feature, at least one")
            for name, values in (("embeddings", embeddings), ("weights", weights),
                                 ("biases", biases)):
                if not np.all(np.isfinite(values)):
                    raise ValueError(f"{name} has non-finite values")
            if children.size and children.min() < -(classes.shape[0] + 1):
                raise ValueError("children holds an out-of-range label")
            model.tree_ = LabelTree(arity, classes.shape[0], children)
            model.vectorizer_ = None
            if params.get("has_vectorizer"):
                vec_arrays = {k[len("vectorizer_"):]: v for k, v in arrays.items()
                              if k.startswith("vectorizer_")}
                _check_vectorizer_params(params["vectorizer"], model)
                model.vectorizer_ = TextVectorizer._from_state(params["vectorizer"], vec_arrays)
                if model.vectorizer_.n_features_ != embeddings.shape[0]:
                    raise ValueError("vocabulary size disagrees with the embeddings")
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, ModelFormatError):
                raise
            raise ModelFormatError(f"invalid learned_tree model ({exc})") from exc
        model.classes_ = classes
        model.embeddings_, model.weights_, model.biases_ = embeddings, weights, biases
        model.label_counts_ = counts
        model.train_loss_ = []
        return model


def _carry_parameters(values: np.ndarray, old: LabelTree, new: LabelTree,
                      source: np.ndarray) -> np.ndarray:
    """Map per-(node, slot) parameters of ``old`` onto the re-assigned tree ``new``.

    A node inherits the rows of the old node it replaces (``source``, see
    :func:`xmltree.label_tree.reassign_tree`); new nodes start at zero. A
    label's leaf slot then takes the parameters of that label's old leaf
    slot: they score the label itself, whereas the slot's inherited ones
    were trained for whatever it held before (often another label).
    """
    carried = np.zeros((new.n_nodes,) + values.shape[1:], dtype=np.float32)
    kept = source >= 0
    carried[kept] = values[source[kept]]
    old_nodes, old_slots = old.leaves()
    new_nodes, new_slots = new.leaves()
    carried[new_nodes, new_slots] = values[old_nodes, old_slots]
    return carried


def _is_text(X) -> bool:
    """True for a non-empty sequence of strings (raw documents)."""
    if isinstance(X, str):
        raise DataFormatError("X: expected a sequence of documents, got a single string")
    if isinstance(X, np.ndarray):
        return X.dtype.kind in "UO" and X.ndim == 1 and X.size > 0 and isinstance(X[0], str)
    return isinstance(X, Sequence) and len(X) > 0 and isinstance(X[0], str)


def _is_label_sets(y) -> bool:
    """True for an indicator matrix or a sequence of label-id collections."""
    if sp.issparse(y):
        return True
    if isinstance(y, np.ndarray):
        return y.ndim == 2
    return isinstance(y, Sequence) and len(y) > 0 and isinstance(y[0], (list, tuple, set,
                                                                        np.ndarray))


def _has_named_labels(y) -> bool:
    """True for label sets (a sequence of collections) holding strings."""
    return not sp.issparse(y) and not isinstance(y, np.ndarray) and any(
        isinstance(label, str) for row in y for label in row)


def fit_text_file(path, model_path=None, **params) -> LearnedTree:
    """Train a LearnedTree on a fastText-style text file (the CLI entry point).

    Each line is one document: its labels as ``__label__NAME`` tokens
    (one or more), then the text. ``xmltree train --model learned-tree
    FILE`` calls this with the command-line hyper-parameters.

    Parameters
    ----------
    path : str or os.PathLike
        Training file (UTF-8).
    model_path : str or os.PathLike, optional
        Where to save the fitted model.
    **params
        LearnedTree hyper-parameters.

    Returns
    -------
    LearnedTree
        The fitted model.

    Raises
    ------
    DataFormatError
        If a line has no label or no text (with the line number).
    """
    texts, labels = read_labeled_text(path)
    model = LearnedTree(**params).fit(texts, labels)
    if model_path is not None:
        model.save(model_path)
    return model


def _array(arrays: dict, name: str, dtype, ndim: int) -> np.ndarray:
    """Fetch a stored array, checking dtype and rank; returns it C-contiguous."""
    value = arrays[name]
    if value.dtype != dtype or value.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D {np.dtype(dtype).name} array")
    return np.ascontiguousarray(value)


def _check_vectorizer_params(params, model: LearnedTree) -> None:
    """A stored vectorizer's settings must be the model's own (which are checked)."""
    same = isinstance(params, dict) and isinstance(params.get("lowercase"), bool) and all(
        is_int(params.get(name)) and params[name] == getattr(model, name)
        for name in ("ngrams", "buckets", "min_count"))
    if not same:
        raise ValueError("the text vectorizer's settings disagree with the model's ngrams, "
                         "buckets and min_count")


def _class_values(values, what: str) -> np.ndarray:
    """``values`` as an array of class labels that model files keep as they are.

    Integers (any integer dtype that fits int64, or floats with integral
    values) become int64, text stays text; anything else (NaN, 1.5, bools,
    other objects) is refused rather than changed on saving.

    Raises
    ------
    DataFormatError
        Naming `what` and the first value that is not a class label.
    """
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind in "US" or (kind == "O" and all(isinstance(v, str) for v in values.flat)):
        return values.astype(str)
    if kind in "iuf" and values.size:
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) >= 2.0**63)
        if np.any(bad):
            raise DataFormatError(f"{what}: class labels must be integers or strings, got "
                                  f"{values[bad][0]!r}")
    if kind not in "iuf":
        raise DataFormatError(f"{what}: class labels must be integers or strings, got dtype "
                              f"{values.dtype}")
    return values.astype(np.int64)


def _load_classes(params: dict, arrays: dict) -> np.ndarray:
    if params["classes_kind"] == "int":
        classes = _array(arrays, "classes", np.int64, 1)
    elif params["classes_kind"] == "str":
        classes = np.asarray(decode_strings(arrays["classes_data"], arrays["classes_offsets"]))
    else:
        raise ValueError(f"unknown classes_kind {params['classes_kind']!r}")
    if classes.size < 1 or np.any(classes[1:] <= classes[:-1]):
        raise ValueError("classes must be non-empty, sorted and unique")
    return classes
