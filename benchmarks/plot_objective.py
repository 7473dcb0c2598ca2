"""The LdSM objective J during node training, by tree depth (like the paper's Figure 1).

Trains one LdSM tree and plots, for every depth, the mean over that depth's nodes of the
epoch-mean objective J of the chosen direction subsets, so one sees J settle faster and
lower deeper in the tree.

Example
-------
    python benchmarks/plot_objective.py --dataset delicious --output objective.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _common import DEFAULT_DATA_HOME, load_split, write_json

import xmltree


def traces_by_depth(model: xmltree.LdSM, tree: int = 0) -> dict[int, np.ndarray]:
    """Mean objective trace (one value per epoch) of the trained nodes at each depth."""
    arrays = model.trees_[tree]
    by_depth: dict[int, list[np.ndarray]] = {}
    for node in np.flatnonzero(arrays["first_child"] >= 0):
        by_depth.setdefault(int(arrays["depth"][node]), []).append(
            model.objective_trace(tree, int(node)))
    return {depth: np.mean(traces, axis=0) for depth, traces in sorted(by_depth.items())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA_HOME)
    parser.add_argument("--dataset", default="delicious")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path("objective_by_depth.png"))
    parser.add_argument("--json", type=Path, help="also write the mean traces to this file")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X_train, Y_train, _, _ = load_split(args.data_home, args.dataset)
    model = xmltree.LdSM(n_trees=1, random_state=args.seed).fit(X_train, Y_train)
    traces = traces_by_depth(model)
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = plt.cm.viridis(np.linspace(0, 1, len(traces)))
    for colour, (depth, trace) in zip(colours, traces.items()):
        ax.plot(np.arange(1, trace.size + 1), trace, color=colour, label=f"depth {depth}")
        print(f"depth {depth:>2}: J first epoch {trace[0]:+.4f}, last epoch {trace[-1]:+.4f}")
    ax.set(xlabel="epoch", ylabel="mean J of the chosen subsets",
           title=f"LdSM node objective by depth ({args.dataset})")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")
    if args.json:
        write_json(args.json, {"args": vars(args), "mean_objective_by_depth": {
            int(depth): trace.tolist() for depth, trace in traces.items()}})


if __name__ == "__main__":
    main()
