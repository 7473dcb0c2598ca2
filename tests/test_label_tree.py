"""Tests of xmltree.learned_tree.label_tree: tree builders, AssignLabels, re-assignment."""

import itertools

import numpy as np
import pytest

from xmltree.learned_tree.label_tree import (
    EMPTY,
    LabelTree,
    assign_children,
    assignment_scores,
    balanced_depth_tree,
    flat_tree,
    huffman_tree,
    n_padded_labels,
    random_tree,
    reassign_tree,
)


def subtree_sizes(tree: LabelTree, n_total: int) -> list[int]:
    """Number of leaf slots (labels + empty dummy slots) below every node."""
    sizes = []
    for node in range(tree.n_nodes):
        stack, count = [node], 0
        while stack:
            for code in tree.children[stack.pop()]:
                if code >= 0:
                    stack.append(int(code))
                else:
                    count += 1
        sizes.append(count)
    return sizes


def check_one_leaf_per_label(tree: LabelTree) -> None:
    codes = tree.children[tree.children <= -2]
    assert sorted(-codes - 2) == list(range(tree.n_labels))


@pytest.mark.parametrize("n_labels,arity", [(1, 2), (2, 2), (7, 2), (10, 3), (26, 5), (9, 4)])
def test_huffman_tree_is_well_formed(n_labels, arity):
    freq = np.arange(1, n_labels + 1)
    tree = huffman_tree(freq, arity)
    check_one_leaf_per_label(tree)
    # Counting empty (dummy) slots, every subtree has ≡ 1 (mod M-1) leaves.
    for size in subtree_sizes(tree, n_padded_labels(n_labels, arity)):
        assert arity == 2 or (size - 1) % (arity - 1) == 0


def test_huffman_binary_depths_match_reference():
    # Classic example: frequencies 5, 9, 12, 13, 16, 45 give code lengths
    # 4, 4, 3, 3, 3, 1.
    tree = huffman_tree([5, 9, 12, 13, 16, 45], 2)
    assert list(tree.label_depth) == [4, 4, 3, 3, 3, 1]


def test_huffman_minimises_expected_depth_bruteforce():
    # Among all random trees over 7 labels, none has a lower weighted depth.
    freq = np.array([1, 2, 3, 5, 8, 13, 21], dtype=float)
    best = np.dot(freq, huffman_tree(freq, 3).label_depth)
    for seed in range(30):
        assert np.dot(freq, random_tree(7, 3, seed).label_depth) >= best - 1e-12


def test_random_and_depth_trees():
    tree = random_tree(30, 4, seed=3)
    check_one_leaf_per_label(tree)
    assert tree.max_depth <= 4
    deep = balanced_depth_tree(30, 4, 3, seed=1)
    check_one_leaf_per_label(deep)
    assert deep.label_depth.max() <= 3
    with pytest.raises(ValueError, match="do not fit"):
        balanced_depth_tree(70, 4, 3, seed=1)
    flat = flat_tree(6)
    assert flat.n_nodes == 1 and list(flat.label_depth) == [1] * 6


def test_paths_follow_children():
    tree = random_tree(40, 3, seed=0)
    for label in range(40):
        nodes = tree.path_nodes[label, :tree.label_depth[label]]
        slots = tree.path_slots[label, :tree.label_depth[label]]
        assert nodes[0] == 0
        for level in range(len(nodes) - 1):
            assert tree.children[nodes[level], slots[level]] == nodes[level + 1]
        assert tree.children[nodes[-1], slots[-1]] == -label - 2
    assert set(tree.labels_under(0)) == set(range(40))
    leaf_nodes, leaf_slots = tree.leaves()
    np.testing.assert_array_equal(tree.children[leaf_nodes, leaf_slots], -np.arange(40) - 2)


def test_malformed_children_are_rejected():
    with pytest.raises(ValueError, match="no leaf"):
        LabelTree(2, 3, np.array([[-2, -3]]))
    with pytest.raises(ValueError, match="two leaves"):
        LabelTree(2, 2, np.array([[-2, -2]]))
    with pytest.raises(ValueError, match="reached twice|out of range"):
        LabelTree(2, 2, np.array([[1, 1], [-2, -3]]))
    with pytest.raises(ValueError, match="not reachable"):
        LabelTree(2, 2, np.array([[-2, -3], [EMPTY, EMPTY]]))


def linear_gain(gradient, assignment):
    return sum(gradient[i, j] for i, j in enumerate(assignment))


def valid_mod_assignments(n, arity):
    for assignment in itertools.product(range(arity), repeat=n):
        sizes = np.bincount(assignment, minlength=arity)
        if np.all(sizes >= 1) and np.all((sizes - 1) % (arity - 1) == 0):
            yield assignment


def concentrated_statistics(preferred, arity, seed):
    """Statistics where label i sends 90% of its examples to child preferred[i]."""
    local = np.random.default_rng(seed)
    counts = local.integers(5, 30, len(preferred)).astype(float)
    conditional = np.full((len(preferred), arity), 0.1 / (arity - 1))
    conditional[np.arange(len(preferred)), preferred] = 0.9
    return conditional * counts[:, None], counts


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("preferred,arity", [([0, 0, 0, 1, 2], 3), ([2, 1, 1, 1, 0, 2, 2], 3),
                                             ([3, 0, 1, 2, 1, 1, 1], 4), ([1, 0, 1, 1, 0], 2)])
def test_assign_children_matches_bruteforce(seed, preferred, arity):
    """On statistics with a clear well-formed split, the greedy AssignLabels
    returns the brute-force optimum of the first-order gain of J_n."""
    probas, counts = concentrated_statistics(preferred, arity, seed)
    gradient, _ = assignment_scores(probas, counts)
    got = assign_children(probas, counts, arity)
    best = max(valid_mod_assignments(len(preferred), arity),
               key=lambda a: linear_gain(gradient, a))
    assert linear_gain(gradient, got) == pytest.approx(linear_gain(gradient, best))
    assert list(got) == list(best) == preferred


@pytest.mark.parametrize("seed", range(4))
def test_depth_constrained_assignment_matches_bruteforce(seed):
    preferred = [0, 1, 1, 2, 2, 2]             # each child holds at most 3 labels
    probas, counts = concentrated_statistics(preferred, 3, seed)
    gradient, _ = assignment_scores(probas, counts, log_gradient=True)
    got = assign_children(probas, counts, 3, levels_below=1, log_gradient=True)
    best = max((a for a in itertools.product(range(3), repeat=6)
                if np.bincount(a, minlength=3).max() <= 3),
               key=lambda a: linear_gain(gradient, a))
    assert list(got) == list(best) == preferred


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n,arity", [(5, 3), (7, 3), (7, 4), (5, 2)])
def test_assign_children_is_well_formed_and_greedy(seed, n, arity):
    """On arbitrary statistics: sizes are well formed, and the first label
    placed is the one with the largest gradient (the greedy step)."""
    local = np.random.default_rng(seed)
    counts = local.integers(1, 20, n).astype(float)
    probas = local.dirichlet(np.ones(arity), size=n) * counts[:, None]
    gradient, margin = assignment_scores(probas, counts)
    got = assign_children(probas, counts, arity)
    sizes = np.bincount(got, minlength=arity)
    assert np.all(sizes >= 1) and np.all((sizes - 1) % (arity - 1) == 0)
    first = np.lexsort((-margin.ravel(), -gradient.ravel()))[0]
    label, child = np.unravel_index(first, gradient.shape)
    assert got[label] == child


def test_greedy_is_not_always_optimal():
    """Pins a limit of Algorithm 2 (the paper's Lemma 1 claims optimality):
    with the sign-valued gradient, label 0 likes children 0 and 1 equally and
    takes child 0 (larger margin) first, leaving label 1 a worse child."""
    counts = np.array([30.0, 20.0, 10.0, 10.0, 30.0])
    conditional = np.array([[0.6, 0.4, 0.0], [0.6, 0.1, 0.3], [0.0, 0.0, 1.0],
                            [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    probas = conditional * counts[:, None]
    gradient, _ = assignment_scores(probas, counts)
    got = assign_children(probas, counts, 3)
    best = max(valid_mod_assignments(5, 3), key=lambda a: linear_gain(gradient, a))
    assert linear_gain(gradient, got) < linear_gain(gradient, best)


def test_assignment_scores_formula():
    counts = np.array([2.0, 6.0])
    probas = np.array([[2.0, 0.0], [1.5, 4.5]])   # p_{.|0} = (1, 0), p_{.|1} = (.25, .75)
    gradient, margin = assignment_scores(probas, counts)
    p_global = np.array([3.5, 4.5]) / 8
    q = counts / 8
    expected = (2 / 2) * (q * (1 - q))[:, None] * np.sign(probas / counts[:, None] - p_global)
    np.testing.assert_allclose(gradient, expected)
    np.testing.assert_allclose(margin, probas / counts[:, None] - p_global)


def test_assignment_rejects_impossible_sizes():
    with pytest.raises(ValueError, match="well-formed"):
        assign_children(np.ones((4, 3)), np.ones(4), 3)
    with pytest.raises(ValueError, match="depth constraint"):
        assign_children(np.ones((5, 2)), np.ones(5), 2, levels_below=1)


def test_dummies_are_assigned_last():
    # 4 real labels + 1 dummy in a ternary node: the dummy takes leftover room.
    counts = np.array([5.0, 5.0, 5.0, 5.0, 0.0])
    probas = np.array([[5, 0, 0], [0, 5, 0], [0, 0, 5], [5, 0, 0], [0, 0, 0]], dtype=float)
    got = assign_children(probas, counts, 3, n_real=4)
    assert list(got[:4]) == [0, 1, 2, 0]
    assert (np.bincount(got, minlength=3) - 1).tolist() in ([2, 0, 0], [0, 2, 0], [0, 0, 2])


@pytest.mark.parametrize("arity,n_labels,max_depth", [(3, 10, None), (2, 9, None),
                                                      (4, 23, None), (3, 20, 3)])
def test_reassign_keeps_one_leaf_per_label(rng, arity, n_labels, max_depth):
    if max_depth is None:
        tree = huffman_tree(rng.integers(1, 50, n_labels), arity)
    else:
        tree = balanced_depth_tree(n_labels, arity, max_depth, seed=0)
    for _ in range(5):
        counts = rng.integers(0, 5, (n_labels, tree.max_depth)).astype(float)
        probas = rng.dirichlet(np.ones(arity), size=(n_labels, tree.max_depth))
        new, source = reassign_tree(tree, probas * counts[..., None], counts,
                                    max_depth=max_depth)
        check_one_leaf_per_label(new)
        assert source.shape == (new.n_nodes,) and source[0] == 0
        assert np.all(source < tree.n_nodes)
        kept = source[source >= 0]
        assert len(set(kept.tolist())) == kept.size
        if max_depth is None:
            n_total = n_padded_labels(n_labels, arity)
            for size in subtree_sizes(new, n_total):
                assert arity == 2 or (size - 1) % (arity - 1) == 0
        else:
            assert new.label_depth.max() <= max_depth
        tree = new


def test_reassign_follows_clear_statistics():
    # Binary tree over 4 labels; the root statistics say labels {0, 2} go
    # left and {1, 3} go right: the new root must split them that way.
    tree = huffman_tree([1, 1, 1, 1], 2)
    counts = np.full((4, tree.max_depth), 10.0)
    probas = np.zeros((4, tree.max_depth, 2))
    probas[:, :, 0] = 5
    probas[:, :, 1] = 5
    probas[[0, 2], 0] = [10, 0]
    probas[[1, 3], 0] = [0, 10]
    new, _ = reassign_tree(tree, probas, counts)
    left = set(new.labels_under(int(new.children[0, 0])).tolist())
    assert left == {0, 2}


def test_describe_lists_frequent_labels():
    tree = huffman_tree([1, 10, 1, 10], 2)
    text = tree.describe(names=["a", "b", "c", "d"], max_labels=2, weights=[1, 10, 1, 10])
    assert text.splitlines()[0].startswith("node 0 (4 labels): b, d")


def test_labels_without_statistics_stay_in_place():
    counts = np.array([10.0, 0.0, 0.0])
    probas = np.array([[10.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    got = assign_children(probas, counts, 2, current=[0, 1, 0])
    assert list(got) == [0, 1, 0]
    got = assign_children(probas, counts, 2, current=[0, 0, 1])
    assert list(got) == [0, 0, 1]


def test_paths_far_larger_than_the_tree_are_refused(monkeypatch):
    # A chain (each node: a label and the next node) has n_labels x depth path
    # entries: a small file could ask for terabytes.
    children = [[-(i + 2), i + 1] for i in range(9)] + [[-11, -12]]
    assert LabelTree(2, 11, np.array(children)).max_depth == 10
    monkeypatch.setattr("xmltree.learned_tree.label_tree.MAX_PATH_ENTRIES", 100)
    with pytest.raises(ValueError, match="paths of 11 labels, 10 deep, exceed 100 entries"):
        LabelTree(2, 11, np.array(children))
