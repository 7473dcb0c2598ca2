"""Build the Cython extensions of xmltree.

Every ``xmltree/**/*.pyx`` becomes an extension module of the same dotted
name, compiled with OpenMP so that kernels can run ``prange`` loops; a module
that needs C++ says so with a ``# distutils: language = c++`` header. Set ``XMLTREE_DEBUG=1`` to compile with bounds and wrap-around checks on
(slow, for hunting memory errors in tests).
"""

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("XMLTREE_DEBUG", "0") == "1"


def find_extensions():
    """Return one Extension per ``.pyx`` file under ``xmltree/``."""
    extensions = []
    for pyx in sorted(Path("xmltree").rglob("*.pyx")):
        module = ".".join(pyx.with_suffix("").parts)
        extensions.append(
            Extension(
                module,
                [str(pyx)],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O3"]) + ["-fopenmp"],
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
    ext_modules=cythonize(find_extensions(), compiler_directives=COMPILER_DIRECTIVES),
    package_data={"xmltree": ["*.pxd", "**/*.pxd"]},
)
