#!/usr/bin/env bash
# Build the API reference (docs/) into build/docs/html, treating every Sphinx
# or docutils warning as an error: exits non-zero if any docstring renders
# with a warning, after reporting them all (--keep-going).
# Needs xmltree importable (built) and the docs extra: pip install -e ".[docs]".
set -euo pipefail
cd "$(dirname "$0")/.."
# -E: read every source again, so warnings of unchanged files are not hidden
# by an earlier build's cache.
python -m sphinx -b html -E -W --keep-going -q docs build/docs/html
echo "API reference built without warnings: build/docs/html/index.html"
