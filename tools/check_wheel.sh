#!/usr/bin/env bash
# Packaging check, as a user without a compiler would meet xmltree:
#   1. clone this repository's committed HEAD (nothing built or untracked here
#      can leak into the result);
#   2. build the sdist, then a wheel FROM that sdist (`python -m build` does
#      both), so a source missing from MANIFEST.in fails here; OpenMP is
#      required, as in the release wheels;
#   3. check that the wheel holds a compiled module for every .pyx;
#   4. install the wheel, with binary dependencies only, into a fresh virtual
#      environment whose PATH holds nothing but that environment (no C
#      compiler, shown by `command -v`);
#   5. import every module of the installed package and run `xmltree demo`
#      from outside the source tree.
# Needs git, python3 with venv, and a C compiler for step 2. Exits non-zero on
# any failure.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== clean clone of $(git -C "$repo" rev-parse --short HEAD)"
git clone --quiet "$repo" "$work/src"

echo "== sdist, then a wheel from the sdist"
python3 -m venv "$work/build-env"
"$work/build-env/bin/python" -m pip install --quiet "build>=1.0"
XMLTREE_OPENMP=1 "$work/build-env/bin/python" -m build --outdir "$work/dist" "$work/src" \
    > "$work/build.log" 2>&1 || { tail -n 50 "$work/build.log"; exit 1; }
sdist=$(echo "$work"/dist/*.tar.gz)
wheel=$(echo "$work"/dist/*.whl)
echo "   $(basename "$sdist")"
echo "   $(basename "$wheel")"

echo "== every .pyx is compiled into the wheel"
python3 - "$work/src" "$wheel" <<'PY'
import sys
import zipfile
from pathlib import Path

src, wheel = Path(sys.argv[1]), sys.argv[2]
built = {name.split(".")[0] for name in zipfile.ZipFile(wheel).namelist()
         if name.endswith((".so", ".pyd"))}
expected = {str(pyx.relative_to(src).with_suffix("")) for pyx in src.glob("xmltree/**/*.pyx")}
if expected - built:
    sys.exit(f"not compiled into the wheel: {sorted(expected - built)}")
print(f"   {len(expected)} extension modules")
PY

echo "== fresh virtual environment, no compiler on its PATH"
python3 -m venv "$work/venv"
bare_path="$work/venv/bin"
for compiler in gcc cc c++ clang cl; do
    if PATH="$bare_path" command -v "$compiler"; then
        echo "a C compiler is reachable on the bare PATH" >&2
        exit 1
    fi
done
echo "   PATH=$bare_path: no gcc, cc, c++, clang or cl"
# --only-binary: neither xmltree nor a dependency may be built from source.
PATH="$bare_path" python -m pip install --quiet --only-binary :all: "$wheel"

echo "== import check and demo, from outside the source tree"
cd "$work"
PATH="$bare_path" python - "$work/venv" <<'PY'
import importlib
import pkgutil
import sys

import xmltree

if not xmltree.__file__.startswith(sys.argv[1]):
    sys.exit(f"xmltree imported from {xmltree.__file__}, not from the new environment")
modules = [m.name for m in pkgutil.walk_packages(xmltree.__path__, "xmltree.")
           if m.name != "xmltree.__main__"]  # importing __main__ would run the CLI
for name in modules:
    importlib.import_module(name)
print(f"   imported {len(modules)} modules from {xmltree.__path__[0]}")
PY
PATH="$bare_path" xmltree --version | tee "$work/version.txt"
grep -q "with OpenMP" "$work/version.txt"
PATH="$bare_path" xmltree demo
echo "== wheel check passed"
