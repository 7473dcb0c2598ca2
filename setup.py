"""Build the Cython extensions of xmltree.

Every ``xmltree/**/*.pyx`` becomes an extension module of the same dotted
name (``XMLTREE_BUILD_ONLY=_ldsm,_tree`` restricts the build to those
modules), compiled with OpenMP so that kernels can run ``prange`` loops; a module
that needs C++ says so with a ``# distutils: language = c++`` header. Set
``XMLTREE_DEBUG=1`` to compile with bounds and wrap-around checks on
(slow, for hunting memory errors in tests).
"""

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("XMLTREE_DEBUG", "0") == "1"
# Comma-separated module names (e.g. "_ldsm,_tree") to build only those; lets
# a developer rebuild one kernel while another is mid-edit. Empty: build all.
BUILD_ONLY = [name for name in os.environ.get("XMLTREE_BUILD_ONLY", "").split(",") if name]


def find_extensions():
    """Return one Extension per ``.pyx`` file under ``xmltree/``."""
    extensions = []
    for pyx in sorted(Path("xmltree").rglob("*.pyx")):
        module = ".".join(pyx.with_suffix("").parts)
        if BUILD_ONLY and pyx.stem not in BUILD_ONLY:
            continue
        extensions.append(
            Extension(
                module,
                [str(pyx)],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                # No kernel reads errno; without it GCC may vectorise sqrt.
                extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O3"])
                + ["-fopenmp", "-fno-math-errno"],
                extra_link_args=["-fopenmp"],
            )
        )
    return extensions


COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
}

setup(
    # cythonize compares timestamps only: a debug build regenerates every C
    # file, which may have been generated with the checks off.
    ext_modules=cythonize(find_extensions(), compiler_directives=COMPILER_DIRECTIVES,
                          force=DEBUG),
    package_data={"xmltree": ["*.pxd", "**/*.pxd"]},
)
