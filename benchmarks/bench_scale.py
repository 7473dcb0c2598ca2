"""LdSM at scale: cost against the number of labels K, and Amazon-670K-shaped runs.

The same benchmark as ``xmltree benchmark`` (this script passes its arguments to it;
``xmltree benchmark --help`` lists them), plus the plots. Two modes, both on synthetic
data from :func:`xmltree.datasets.make_synthetic_preset` (Amazon-670K statistics:
D = 135,909, 5.45 labels and ~76 non-zeros per point, Zipf label frequencies with
exponent 0.6):

* **curve** (default): N points fixed (``--n-samples``, default 50,000, of which
  ``--test-fraction`` are held out), K = ``--labels`` (default 10^3 10^4 10^5 10^6).
* **preset** (``--preset amazon670k-shape --scale S [S ...]``): the preset at each
  scale S (N and K both times S), with ``--n-trees`` trees.

Each tree may grow ``--max-nodes`` nodes, by default 2 K (room for a leaf per label).
For every point: train time (wall, CPU), peak RSS of a forked child, model size on disk,
P@1/3/5, maximum tree depth against [log_M K, 3 log_M K] (the paper's Figure 2), and
prediction ms/example, written to ``--output`` as ``scale.json``; this script adds PNG
plots of depth and costs there (``--plot-only DIR`` redraws them from a report).

Examples
--------
    python benchmarks/bench_scale.py --output report/
    python benchmarks/bench_scale.py --labels 1000 10000 --n-samples 20000 --epochs 2
    python benchmarks/bench_scale.py --preset amazon670k-shape --scale 0.1 0.2 --n-trees 3
    python benchmarks/bench_scale.py --plot-only report/
"""

import argparse
import json
import sys
from pathlib import Path

from _common import plot_scale, require_matplotlib

from xmltree.cli import main as xmltree_main


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--output", type=Path, default=Path("scale-report"))
    parser.add_argument("--plot-only", type=Path)
    parser.add_argument("-q", "--quiet", action="store_true")
    known, rest = parser.parse_known_args(argv)
    require_matplotlib()  # before hours of training, not after
    directory = known.plot_only
    if directory is None:
        quiet = ["-q"] if known.quiet else []
        status = xmltree_main([*quiet, "benchmark", "--output", str(known.output), *rest])
        if status:
            return status
        directory = known.output
    report = json.loads((directory / "scale.json").read_text())
    against = "n_samples" if report["settings"].get("preset") else "n_labels"
    for path in plot_scale(report["results"], directory, against=against):
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
