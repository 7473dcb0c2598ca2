"""LdSM against its best peer as the synthetic shapes grow: one plot from ``bench_ldsm.py`` runs.

Reads the ``--json`` files of ``bench_ldsm.py`` runs on ``<preset>@<scale>`` sets (each
with LdSM and its peers in the same run), and draws, per preset, LdSM's P@1 and P@5 over
the best peer's, and its fit time and peak memory over omikuji Parabel's, against the
scale. A ratio of 1 is a tie; the accuracy ratios should not fall as the scale grows. A
peer too slow to run again beside LdSM (omikuji Bonsai at scale 0.3) may come from a report
of its own: the runs of a set are pooled over the reports, each model's first run kept, so
keep the timed peer (Parabel) in LdSM's report. Where no peer finished beside LdSM (every one
over ``--memory-limit-mb``, say: the reports' ``"failed"`` runs) there is no ratio to draw; a
dotted line marks the scale and the script prints why.

Examples
--------
    python benchmarks/bench_ldsm.py --datasets amazon670k-shape@0.3 \
        --models ldsm omikuji-parabel omikuji-bonsai --json amz03.json
    python benchmarks/plot_scale_ratio.py amz01.json amz03.json amz1.json del01.json \
        --output benchmarks/scale_ratio.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from _common import require_matplotlib
from bench_ldsm import first_run_by_model

#: What each panel divides: (key, LdSM's over whose, axis label).
PANELS = (("P@1", "best", "P@1 LdSM / best peer"),
          ("P@5", "best", "P@5 LdSM / best peer"),
          ("train_s", "omikuji-parabel", "fit LdSM / Parabel"),
          ("peak_rss_mb", "omikuji-parabel", "peak RSS LdSM / Parabel"))


def scale_ratios(reports: list[dict]) -> dict[str, list[tuple[float, dict]]]:
    """Per preset, ``(scale, {panel key: ratio})`` sorted by scale.

    Parameters
    ----------
    reports : list of dict
        ``bench_ldsm.py`` JSON reports; sets named ``<preset>@<scale>`` with
        an LdSM run and at least one peer count. A set's runs are pooled over
        the reports, and each model's first run (in the order of `reports`)
        counts.

    Returns
    -------
    dict of str to list of (float, dict)
        A ratio is NaN when its peer did not run.
    """
    runs_by_set: dict[tuple[str, float], dict] = {}
    for report in reports:
        for dataset, runs in report["datasets"].items():
            preset, at, scale = dataset.partition("@")
            if at:
                pooled = runs_by_set.setdefault((preset, float(scale)), {})
                for model, run in first_run_by_model(runs).items():
                    pooled.setdefault(model, run)
    curves: dict[str, dict[float, dict]] = {}
    for (preset, scale), by_model in runs_by_set.items():
        ldsm = by_model.pop("ldsm", None)
        if ldsm is not None and by_model:
            curves.setdefault(preset, {})[scale] = {
                key: _ratio(ldsm, by_model, key, over) for key, over, _ in PANELS}
    return {preset: sorted(points.items()) for preset, points in curves.items()}


def unfinished_peers(reports: list[dict]) -> dict[str, list[tuple[float, list[str]]]]:
    """Per preset, ``(scale, ["<peer>: <why>", ...])`` of the scales where LdSM ran and
    no peer finished, sorted by scale (the reports' ``"failed"`` runs say why)."""
    finished: dict[tuple[str, float], set] = {}
    failed: dict[tuple[str, float], list[str]] = {}
    for report in reports:
        for dataset, runs in report["datasets"].items():
            preset, at, scale = dataset.partition("@")
            if at:
                finished.setdefault((preset, float(scale)), set()).update(
                    run["model"] for run in runs)
        for dataset, runs in report.get("failed", {}).items():
            preset, at, scale = dataset.partition("@")
            if at:
                failed.setdefault((preset, float(scale)), []).extend(
                    f"{run['model']}: {run['reason']}" for run in runs)
    unfinished: dict[str, list[tuple[float, list[str]]]] = {}
    for (preset, scale), why in sorted(failed.items()):
        if finished.get((preset, scale), set()) == {"ldsm"}:
            unfinished.setdefault(preset, []).append((scale, why))
    return unfinished


def _ratio(ldsm: dict, peers: dict, key: str, over: str) -> float:
    """LdSM's `key` over the best peer's (``over="best"``) or over peer `over`'s."""
    if over == "best":
        return ldsm[key] / max(run[key] for run in peers.values())
    return ldsm[key] / peers[over][key] if over in peers else float("nan")


def plot(curves: dict, output: Path, unfinished: dict | None = None) -> None:
    """One panel per ``PANELS`` entry, one line per preset, scale on a log axis; a dotted
    line in the preset's colour at each scale of `unfinished` (no peer finished)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PANELS), figsize=(4 * len(PANELS), 3.5))
    for ax, (key, _, label) in zip(axes, PANELS):
        for preset, points in curves.items():
            line, = ax.plot([scale for scale, _ in points],
                            [ratios[key] for _, ratios in points], "o-", label=preset)
            for scale, _ in (unfinished or {}).get(preset, []):
                ax.axvline(scale, color=line.get_color(), linestyle=":", linewidth=1.5)
        ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
        ax.set(xscale="log", xlabel="scale", ylabel=label)
    axes[0].legend(fontsize="small")
    if unfinished:
        axes[0].set_title("dotted: no peer finished", fontsize="small")
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="bench_ldsm.py --json files")
    parser.add_argument("--output", type=Path, default=Path("scale_ratio.png"))
    args = parser.parse_args(argv)
    reports = [json.loads(path.read_text()) for path in args.reports]
    curves, unfinished = scale_ratios(reports), unfinished_peers(reports)
    for preset, points in curves.items():
        for scale, ratios in points:
            print(f"{preset}@{scale:g}: " + ", ".join(f"{label} {ratios[key]:.3f}"
                                                      for key, _, label in PANELS))
    for preset, points in unfinished.items():
        for scale, why in points:
            print(f"{preset}@{scale:g}: no peer finished ({'; '.join(why)})")
    plot(curves, args.output, unfinished)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
