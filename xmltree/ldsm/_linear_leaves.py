"""Linear leaves of LdSM: one classifier per label, trained on its tree neighbourhood.

A leaf histogram scores a label by how often it occurs among the leaf's
training examples, whatever the example being predicted looks like. Linear
leaves add a discriminative model: every label gets a sparse linear
classifier (``xmltree.ldsm._label_models``), and at prediction an example's
``predict_candidates`` best labels by histogram score are re-scored with
``sigmoid(MARGIN_SCALE * margin) ** (1 - histogram_weight) * histogram **
histogram_weight`` (``xmltree.ldsm._forest.Forest.use_label_models``).

Which examples train a label's classifier is what keeps this a tree method
rather than a one-vs-rest model over all labels: the label's *neighbourhood*,
the training examples that have the label among their own ``n_candidates``
best labels in the forest (the first of those prediction re-scores), plus the examples
carrying it. So each label learns from all its positives (as PLT and Parabel
do) against the hard negatives the trees put next to them, and an example
trains at most ``n_candidates`` + (its labels) classifiers, whatever the
number of labels.

The regulariser shrinks a rare label's margins more than a frequent one's (a
label with a single positive falls well short of a margin of 1 even on that
example), so ranked by margin alone the labels seen most in training win too
often. The stored biases are therefore *logit-adjusted* (Menon et al.,
"Long-tail learning via logit adjustment", ICLR 2021): the sigmoid's
argument for label ``l`` is raised by ``-LOGIT_ADJUSTMENT * log(prior_l)``,
``prior_l`` being the share of training examples carrying ``l`` (smoothed by
one).
"""

from __future__ import annotations

import logging

import joblib
import numpy as np
import scipy.sparse as sp

from .._fit_progress import counted_bar, progress_bar
from .._validation import check_csr_structure, kernel_csr, take_rows
from ..exceptions import DataFormatError, ModelFormatError
from ..metrics._metrics import ndcg_by_row
from ..metrics._ranking import top_k
from ._auto_settings import CLASSIFIER_C
from ._label_models import train_label_models
from ._neighbourhoods import list_neighbourhoods

__all__ = ["LinearLeaves", "MARGIN_SCALE", "LOGIT_ADJUSTMENT", "LINEAR_LEAF_ARRAYS",
           "fit_linear_leaves", "choose_C", "logit_adjustment", "check_linear_leaves"]

logger = logging.getLogger(__name__)

#: Slope of the sigmoid that turns a classifier margin into a score: the
#: squared-hinge classifiers aim at margins of +-1, which this maps to
#: about 0.98 and 0.02.
MARGIN_SCALE = 4.0

#: Passes of the dual coordinate descent, at most, and its stopping
#: tolerance on the projected gradient: twice LIBLINEAR's default for this
#: dual, which scored the same on held-out rows of the development suite in
#: fewer passes ("The classifiers' stopping tolerance" in the benchmarks' lab
#: notebook).
MAX_EPOCHS = 20
TOLERANCE = 0.2

#: Share of a label's negatives that the solver's first passes visit beside
#: its positives, before passes over all of them: most of the others are then
#: beyond the margin from the start and leave the passes early. The same
#: problem, solved to the same tolerance, in fewer visits ("The solver's
#: first passes on a sample of the negatives" in the benchmarks' lab notebook).
FIRST_NEGATIVES = 0.1

#: Weight of the labels' log prior subtracted from the sigmoid's argument
#: (``MARGIN_SCALE`` times the margin), see the module notes. On held-out
#: rows it raised P@1 most where labels are rarest (the Amazon-670K shape)
#: and PSP@5 on most development sets, with P@5 within noise ("Logit
#: adjustment" in the benchmarks' lab notebook); larger weights favour the
#: rare labels further, at the cost of P@k.
LOGIT_ADJUSTMENT = 0.05

#: Random negatives drawn for a label, per positive, on top of its tree
#: neighbourhood. When rows carry many labels, a row's candidates are mostly
#: its own labels, and a rarer label's neighbourhood holds hardly any rows
#: without it: on the Delicious-200K shape (75 labels a row) the labels'
#: biases came out positive and the classifiers alone ranked at chance. A few
#: random negatives per positive fix that at little cost elsewhere ("Random
#: negatives" in the benchmarks' lab notebook). They cost 4 x (label
#: occurrences) training pairs, next to the n_candidates x n_samples of the
#: neighbourhoods.
RANDOM_NEGATIVES = 4

#: ``C="auto"``: the C it starts from (the default's where labels are few),
#: the factor between the values it tries, and the most steps up it takes. A
#: larger C lets the classifiers fit their training rows more closely, which
#: pays where labels follow the features with little noise (the synthetic
#: shapes) and costs precision on noisy real data ("Choosing C at fit" in
#: the benchmarks' lab notebook).
BASE_C = CLASSIFIER_C
C_STEP = 4.0
MAX_C_STEPS = 3

#: Training rows ``C="auto"`` sets aside to judge each C: this share of
#: them, at most ``C_CHECK_MAX_ROWS`` (enough to tell a gain of a point of
#: nDCG@5 from noise), and none below ``C_CHECK_MIN_ROWS`` (then BASE_C).
C_CHECK_SHARE = 0.1
C_CHECK_MAX_ROWS = 5000
C_CHECK_MIN_ROWS = 100

#: A larger C is taken only when it raises the set-aside rows' mean nDCG@5
#: by more than this many standard errors of the rows' gains: on noise,
#: ``BASE_C`` stays.
C_CHECK_STANDARD_ERRORS = 2.0

#: Labels whose classifiers judge each C: a random share of them, at least
#: ``C_CHECK_MIN_LABELS`` (or all) and at most ``C_CHECK_MAX_LABELS``. Every
#: label's classifier is trained on its own neighbourhood, so a sample of the
#: labels costs that share of the solves; the set-aside rows rank the sampled
#: labels among their candidates. The cap bounds the check's cost where
#: labels number in the hundreds of thousands, and still leaves several
#: hundred set-aside rows that carry a sampled label; so does the minimum on
#: the text corpora, where labels number in the hundreds and judging every
#: one cost a whole solve at each C tried ("The check of C where labels are
#: few" in the benchmarks' lab notebook).
C_CHECK_LABEL_SHARE = 0.1
C_CHECK_MIN_LABELS = 100
C_CHECK_MAX_LABELS = 25000

#: Margins ``rank_by_margin`` holds at a time (rows x labels, dense).
RANKING_BLOCK_ENTRIES = 2**24

#: Depth of the nDCG that judges each C: what users read (P@1 to P@5).
CHECK_DEPTH = 5

#: Title of the label classifiers' progress bar.
LABELS_BAR = "LdSM label classifiers"

#: Stored classifier weights need at least this magnitude, so that the model
#: stays O(useful weights), as Parabel's (which drops weights below 0.1; a
#: lower threshold ranked better on held-out rows, down to this one).
WEIGHT_THRESHOLD = 0.05

#: Blocks of labels per job of a joblib backend that is not threads: a few per
#: worker balance labels of unequal cost.
LABEL_BLOCKS_PER_JOB = 4

#: Bytes of scores that the training rows' candidates take at a time, at
#: most: the rows of a block descend the trees together, and the more rows
#: share each node's weights the faster they descend (the forest's
#: ``MAX_BLOCK_SIZE``); the scores of all the rows at once would take as much
#: memory again as the candidates, at the peak of the fit ("Candidates in
#: larger blocks" in the benchmarks' lab notebook).
CANDIDATE_BLOCK_BYTES = 2**27

#: The arrays of the label classifiers in model files, with their dtypes.
LINEAR_LEAF_ARRAYS = {
    "labels/indptr": np.int64,
    "labels/indices": np.int32,
    "labels/values": np.float32,
    "labels/bias": np.float32,
}


class LinearLeaves:
    """Per-label linear classifiers that re-score each example's best histogram labels.

    A leaf model of ``xmltree.ldsm._leaf_models`` (see there for the protocol).

    Parameters
    ----------
    weights : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features)
        One classifier per label (int64 row pointers, sorted feature ids).
    bias : numpy.ndarray of float32, shape (n_labels,)
        Their biases.
    """

    ARRAY_PREFIX = "labels/"
    RESCORES_CANDIDATES = True
    # Each classifier is trained on the neighbourhoods of all the trees.
    MERGEABLE = False

    def __init__(self, weights: sp.csr_matrix, bias: np.ndarray, resolved: dict | None = None):
        self.weights = weights
        self.bias = bias
        self.resolved = {} if resolved is None else resolved

    @classmethod
    def fit(cls, forest, X, Y, settings: dict, seed: int, n_threads: int) -> LinearLeaves:
        """Train every label's classifier on its neighbourhood in `forest`."""
        weights, bias, C = fit_linear_leaves(forest, X, Y, C=settings["C"],
                                             n_candidates=settings["n_candidates"], seed=seed,
                                             n_threads=n_threads, verbose=settings["verbose"])
        # A fit must not make a model its loader refuses.
        if not (np.all(np.isfinite(weights.data)) and np.all(np.isfinite(bias))):
            raise ValueError(f"the label classifiers diverged (non-finite weights) with "
                             f"C={C!r}; use a larger C")
        return cls(weights, bias, resolved={"C": C})

    def install(self, forest, settings: dict) -> None:
        """Make `forest` re-score its ``predict_candidates`` best labels with the classifiers."""
        forest.use_label_models(self.weights, self.bias,
                                n_candidates=settings["predict_candidates"],
                                histogram_weight=settings["histogram_weight"],
                                margin_scale=MARGIN_SCALE)

    def get_state(self) -> tuple[dict, dict]:
        """No settings of their own; the four arrays of ``LINEAR_LEAF_ARRAYS``."""
        weights = self.weights
        return {}, dict(zip(LINEAR_LEAF_ARRAYS, (weights.indptr, weights.indices, weights.data,
                                                 self.bias)))

    @classmethod
    def from_state(cls, params, arrays: dict, n_features: int, n_labels: int) -> LinearLeaves:
        """Checked classifiers read from a model file (``ModelFormatError`` if not valid)."""
        return cls(*check_linear_leaves(arrays, n_features, n_labels))


def fit_linear_leaves(forest, X: sp.csr_matrix, Y: sp.csr_matrix, *, C: float | str,
                      n_candidates: int, seed: int, n_threads: int, verbose: bool = False):
    """Train every label's classifier on its neighbourhood in ``forest``.

    Parameters
    ----------
    forest : xmltree.ldsm._forest.Forest
        The trees, still scoring with histograms only.
    X, Y : scipy.sparse.csr_matrix
        The checked (and scaled) training rows and their labels.
    C : float or "auto"
        Weight of the squared hinge loss against the L2 regulariser;
        "auto": chosen by :func:`choose_C`.
    n_candidates : int
        Labels per training example: an example joins the neighbourhoods of
        as many of its best labels (see the module notes).
    seed : int
        Seed of the random negatives and of the solver's visiting orders.
    n_threads : int
        Threads.
    verbose : bool, default=False
        Show progress bars (with an estimate of the time left) of the
        training rows' candidates and of the labels trained: the same
        classifiers.

    Returns
    -------
    weights : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features)
    bias : numpy.ndarray of float32, shape (n_labels,)
        Logit-adjusted (see the module notes).
    C : float
        The C they were trained with (`C` itself unless "auto").
    """
    candidates = _candidates(forest, X, n_candidates, n_threads, verbose)
    solver = {"max_epochs": MAX_EPOCHS, "tolerance": TOLERANCE,
              "first_negatives": FIRST_NEGATIVES, "weight_threshold": WEIGHT_THRESHOLD,
              "seed": seed, "n_threads": n_threads}
    if C == "auto":
        C = choose_C(X, Y, candidates, solver, verbose)
    # The candidates are dropped as soon as the neighbourhoods are listed:
    # rows x (training candidates) labels that the classifiers do not need.
    problem = neighbourhoods(candidates, Y, random_negatives=RANDOM_NEGATIVES, seed=seed)
    del candidates
    weights, bias = _solve(X, *problem, {**solver, "C": C}, verbose)
    return weights, bias + logit_adjustment(Y), C


def choose_C(X: sp.csr_matrix, Y: sp.csr_matrix, candidates: np.ndarray, solver: dict,
             verbose: bool = False) -> float:
    """The C that ``C="auto"`` resolves to, judged on training rows set aside.

    The classifiers of a random sample of the labels (``C_CHECK_LABEL_SHARE``
    of them, at least ``C_CHECK_MIN_LABELS``, at most ``C_CHECK_MAX_LABELS``)
    are trained to convergence without a random slice of the training rows
    (``C_CHECK_SHARE`` of them, at most ``C_CHECK_MAX_ROWS``), at ``BASE_C``
    and then at ``C_STEP`` times the last C, up to ``MAX_C_STEPS`` times.
    Each ranks the sampled labels among the slice's own candidates by margin
    alone (no histograms: the trees saw those rows), and a step is taken
    while it raises the mean nDCG@5 of the slice's rows that carry a sampled
    label by more than ``C_CHECK_STANDARD_ERRORS`` standard errors of the
    per-row gain.

    Parameters
    ----------
    X, Y : scipy.sparse.csr_matrix
        The checked (and scaled) training rows and their labels.
    candidates : numpy.ndarray of int32, shape (n_samples, n_candidates)
        The training rows' best labels in the forest, -1 padded.
    solver : dict
        ``train_label_models``' settings but C.
    verbose : bool, default=False
        Show the solver's progress bars.

    Returns
    -------
    float
    """
    n_samples, n_labels = Y.shape
    n_check = min(C_CHECK_MAX_ROWS, int(C_CHECK_SHARE * n_samples))
    if n_check < C_CHECK_MIN_ROWS:
        return BASE_C
    rng = np.random.default_rng(solver["seed"])
    held = np.zeros(n_samples, dtype=bool)
    held[rng.choice(n_samples, n_check, replace=False)] = True
    kept, checked = np.flatnonzero(~held), np.flatnonzero(held)
    sampled = _sample_labels(n_labels, rng)
    # Label ids in the sample, -1 elsewhere; the last entry maps the padding.
    position = np.full(n_labels + 1, -1, dtype=np.int32)
    position[sampled] = np.arange(sampled.size, dtype=np.int32)
    Y_sampled = Y[:, sampled]
    Y_sampled.sort_indices()
    Y_fit = take_rows(Y_sampled, kept)
    problem = neighbourhoods(position[candidates[kept]], Y_fit,
                             random_negatives=RANDOM_NEGATIVES, seed=solver["seed"])
    X_fit = take_rows(X, kept)
    judged = checked[np.diff(Y_sampled.indptr)[checked] > 0]
    X_check, Y_check = take_rows(X, judged), take_rows(Y_sampled, judged)
    check_candidates = position[candidates[judged]]
    adjustment = logit_adjustment(Y_fit)
    chosen, chosen_ndcg = BASE_C, None
    for step in range(MAX_C_STEPS + 1):
        C = BASE_C * C_STEP ** step
        # Converged like the model's own: a few passes favour the smaller C,
        # whose solve converges sooner.
        weights, bias = _solve(X_fit, *problem, {**solver, "C": C}, verbose,
                               title=f"{LABELS_BAR}, checking C={C:g}")
        ranked = rank_by_margin(X_check, check_candidates, weights, bias + adjustment,
                                CHECK_DEPTH)
        ndcg = ndcg_by_row(Y_check, ranked, CHECK_DEPTH)
        if chosen_ndcg is not None and not _clearly_better(ndcg, chosen_ndcg):
            break
        chosen, chosen_ndcg = C, ndcg
    logger.info("C='auto' chose C=%g on %d training rows set aside and %d labels", chosen,
                judged.size, sampled.size)
    return chosen


def _sample_labels(n_labels: int, rng: np.random.Generator) -> np.ndarray:
    """The sorted ids of the labels ``C="auto"`` judges."""
    share = min(C_CHECK_MAX_LABELS, round(C_CHECK_LABEL_SHARE * n_labels))
    size = min(n_labels, max(C_CHECK_MIN_LABELS, share))
    return np.sort(rng.choice(n_labels, size, replace=False))


def rank_by_margin(X: sp.csr_matrix, candidates: np.ndarray, weights: sp.csr_matrix,
                   bias: np.ndarray, depth: int) -> np.ndarray:
    """Each row's `depth` best candidates by classifier margin.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    candidates : numpy.ndarray of int32, shape (n_samples, n_candidates)
        Label ids in any order, -1 padded.
    weights : scipy.sparse.csr_matrix of shape (n_labels, n_features)
    bias : numpy.ndarray of shape (n_labels,)
    depth : int

    Returns
    -------
    numpy.ndarray of int32, shape (n_samples, depth)
        Best first (of equal margins the lower label id), -1 padded.
    """
    ranked = np.full((X.shape[0], depth), -1, dtype=np.int32)
    if candidates.shape[1] == 0:
        return ranked
    transposed = weights.T.tocsr()
    # A block's margins are dense over every label: bounded in size.
    block = max(1, RANKING_BLOCK_ENTRIES // max(1, weights.shape[0]))
    for start in range(0, X.shape[0], block):
        # Sorted, so that ties go to the lower label id whatever the candidates' order.
        labels = np.sort(candidates[start:start + block], axis=1)
        margins = (X[start:start + block] @ transposed).toarray()
        scores = np.take_along_axis(margins, np.maximum(labels, 0), axis=1) + bias[labels]
        scores[labels < 0] = -np.inf
        best = top_k(scores, depth)[0]
        ranked[start:start + block] = np.where(
            best >= 0, np.take_along_axis(labels, np.maximum(best, 0), axis=1), -1)
    return ranked


def _clearly_better(scores: np.ndarray, baseline: np.ndarray) -> bool:
    """Whether the rows' mean score beats the baseline's beyond noise."""
    gain = scores - baseline
    error = gain.std(ddof=1) / np.sqrt(gain.size)
    return bool(gain.mean() > C_CHECK_STANDARD_ERRORS * error)


def _solve(X, indptr, examples, targets, solver: dict, verbose: bool,
           title: str = LABELS_BAR):
    """Every label's classifier, in one call here or as blocks of the active joblib
    backend (``title`` names their progress bar)."""
    backend, n_jobs = joblib.parallel.get_active_backend(prefer="threads")
    if not getattr(backend, "uses_threads", False):
        n_blocks = LABEL_BLOCKS_PER_JOB * max(1, joblib.effective_n_jobs(n_jobs))
        return _train_in_blocks(X, indptr, examples, targets, solver, n_blocks, verbose, title)
    with counted_bar(indptr.shape[0] - 1, title, "label", verbose,
                     solver["n_threads"]) as labels_done:
        return train_label_models(X, indptr, examples, targets, **solver,
                                  progress=labels_done)


def logit_adjustment(Y: sp.csr_matrix) -> np.ndarray:
    """What each label's bias gains: ``-LOGIT_ADJUSTMENT * log(prior) / MARGIN_SCALE``.

    The prior of a label is ``(examples carrying it + 1) / (examples + 1)``,
    so a label without examples gets a finite adjustment too.

    Parameters
    ----------
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        The training examples' labels.

    Returns
    -------
    numpy.ndarray of float32, shape (n_labels,)
    """
    n_samples, n_labels = Y.shape
    prior = (np.bincount(Y.indices, minlength=n_labels) + 1.0) / (n_samples + 1.0)
    return (-LOGIT_ADJUSTMENT / MARGIN_SCALE * np.log(prior)).astype(np.float32)


def _candidates(forest, X: sp.csr_matrix, n_candidates: int, n_threads: int,
                verbose: bool) -> np.ndarray:
    """Every training row's best labels in the forest, in no particular order,
    found in blocks of rows.

    A block's scores take ``CANDIDATE_BLOCK_BYTES`` at most and go as soon
    as the block is done; its labels are written straight into their rows of
    the result.
    """
    n_rows = X.shape[0]
    candidates = np.empty((n_rows, n_candidates), dtype=np.int32)
    block_rows = max(1, CANDIDATE_BLOCK_BYTES // (4 * n_candidates))
    bar = progress_bar(n_rows, "LdSM candidates", "row", verbose)
    try:
        for start in range(0, n_rows, block_rows):
            sliced = X[start:start + block_rows]
            rows = kernel_csr(sliced.data, sliced.indices, sliced.indptr, sliced.shape)
            forest.predict_top_k(rows, n_candidates, n_threads, check_input=False,
                                 labels=candidates[start:start + rows.shape[0]], ordered=False)
            bar.update(rows.shape[0])
    finally:
        bar.close()
    return candidates


def _train_in_blocks(X, indptr, examples, targets, solver: dict, n_blocks: int,
                     verbose: bool = False, title: str = LABELS_BAR):
    """The classifiers in blocks of consecutive labels, as tasks of the active joblib backend.

    Under a backend that is not threads (a Dask cluster, say) each block is a
    task on its slice of the neighbourhoods; X is the same object in every
    task, so joblib's Dask backend scatters it once. The labels' seeds follow
    their ids, so the classifiers are those of one call, bit for bit.
    """
    n_labels = indptr.shape[0] - 1
    bounds = np.linspace(0, n_labels, min(n_blocks, max(n_labels, 1)) + 1).astype(np.int64)
    jobs = []
    for first, last in zip(bounds[:-1], bounds[1:]):
        start, stop = indptr[first], indptr[last]
        jobs.append(joblib.delayed(train_label_models)(
            X, indptr[first:last + 1] - start, examples[start:stop], targets[start:stop],
            **solver, first_label=int(first)))
    bar = progress_bar(n_labels, title, "label", verbose)
    blocks = []
    try:
        for block in joblib.Parallel(return_as="generator")(jobs):
            blocks.append(block)
            bar.update(block[1].shape[0])
    finally:
        bar.close()
    weights = sp.vstack([block for block, _ in blocks], format="csr")
    return (kernel_csr(weights.data, weights.indices, weights.indptr, weights.shape),
            np.concatenate([bias for _, bias in blocks]))


def neighbourhoods(candidates: np.ndarray, Y: sp.csr_matrix, *, random_negatives: float = 0,
                   seed: int = 0):
    """Each label's training examples and targets, label by label.

    Parameters
    ----------
    candidates : numpy.ndarray of int32, shape (n_samples, n_candidates)
        Every example's best labels in the forest, -1 padded.
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels)
        The examples' labels.
    random_negatives : float, default=0
        Rows drawn uniformly (with replacement) for each label, per positive
        of the label, added to its examples (a drawn row that carries the
        label stays a positive).
    seed : int, default=0
        Seed of those draws.

    Returns
    -------
    indptr : numpy.ndarray of int64, shape (n_labels + 1,)
    examples : numpy.ndarray of int32
        Label ``l``'s examples are ``examples[indptr[l]:indptr[l + 1]]``, in
        increasing order: those with ``l`` among their candidates or labels,
        and the random ones.
    targets : numpy.ndarray of int8
        +1 where the example carries the label, -1 elsewhere.
    """
    n_samples, n_labels = Y.shape
    if candidates.shape[0] != n_samples or (candidates.size and candidates.max() >= n_labels):
        raise ValueError("candidates must hold a row of label ids below n_labels per example")
    draw_indptr, draw_labels = _draw_negatives(Y, random_negatives, seed)
    return list_neighbourhoods(np.ascontiguousarray(candidates, dtype=np.int32),
                               Y.indptr.astype(np.int64, copy=False),
                               Y.indices.astype(np.int32, copy=False), draw_indptr, draw_labels,
                               n_labels)


def _draw_negatives(Y: sp.csr_matrix, random_negatives: float, seed: int):
    """Rows drawn for every label, ``ceil(random_negatives x its positives)`` of them.

    Returns them grouped by row, as ``(indptr, labels)``: row ``i`` was drawn
    for ``labels[indptr[i]:indptr[i + 1]]``.
    """
    n_samples, n_labels = Y.shape
    per_label = np.ceil(random_negatives * np.bincount(Y.indices, minlength=n_labels))
    labels = np.repeat(np.arange(n_labels, dtype=np.int32), per_label.astype(np.int64))
    rows = np.random.default_rng(seed).integers(0, n_samples, labels.size, dtype=np.int32)
    indptr = np.zeros(n_samples + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_samples), out=indptr[1:])
    return indptr, labels[np.argsort(rows, kind="stable")]


def check_linear_leaves(arrays: dict, n_features: int, n_labels: int):
    """Check stored label classifiers before any kernel reads them.

    Returns
    -------
    weights : scipy.sparse.csr_matrix of float32, shape (n_labels, n_features)
    bias : numpy.ndarray of float32, shape (n_labels,)

    Raises
    ------
    ModelFormatError
        On a missing array, a wrong dtype or shape, row pointers that do not
        describe the stored weights, feature ids out of range or unsorted
        within a label, or non-finite values.
    """
    for name, dtype in LINEAR_LEAF_ARRAYS.items():
        array = arrays.get(name)
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
            raise ModelFormatError(f"linear leaves: {name} missing or not a 1-D "
                                   f"{np.dtype(dtype).name} array")
    indptr, indices = arrays["labels/indptr"], arrays["labels/indices"]
    values, bias = arrays["labels/values"], arrays["labels/bias"]
    if indptr.shape != (n_labels + 1,) or bias.shape != (n_labels,):
        raise ModelFormatError("linear leaves: one classifier per label expected")
    if values.shape != indices.shape:
        raise ModelFormatError("linear leaves: feature ids and weights differ in length")
    try:
        check_csr_structure(indptr, indices, (n_labels, n_features), "linear leaves")
    except DataFormatError as exc:
        raise ModelFormatError(str(exc)) from None
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(bias))):
        raise ModelFormatError("linear leaves: non-finite weights")
    return kernel_csr(values, indices, indptr, (n_labels, n_features)), bias
