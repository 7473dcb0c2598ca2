"""Build the Cython extensions of xmltree.

Every ``xmltree/**/*.pyx`` becomes an extension module of the same dotted
name (``XMLTREE_BUILD_ONLY=_builder,_forest`` restricts the build to those
modules); a module that needs C++ says so with a ``# distutils: language =
c++`` header. Set ``XMLTREE_DEBUG=1`` to compile with bounds and wrap-around
checks on (slow, for hunting memory errors in tests).

OpenMP runs the kernels' ``prange`` loops on several threads. The build
compiles and links a small OpenMP program with the flags of the compiler in
use (GCC and LLVM clang: ``-fopenmp``; Apple clang: ``-Xpreprocessor
-fopenmp`` with libomp from ``$LIBOMP_PREFIX`` or Homebrew; MSVC:
``/openmp``) and keeps the first that works. If none does, the kernels are
built without OpenMP: their loops then run on one thread, with the same
results. ``XMLTREE_OPENMP=0`` forces that, ``XMLTREE_OPENMP=1`` makes a
missing OpenMP an error (as the wheel builds do). ``xmltree --version``
tells which build is installed.

Extensions are cythonized when they are built, not when this file is read,
so that making an sdist needs no Cython and ships no generated C; they
compile on all cores unless ``build_ext -j N`` says otherwise.
"""

import os
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, LinkError

DEBUG = os.environ.get("XMLTREE_DEBUG", "0") == "1"
# Comma-separated module names (e.g. "_builder,_forest") to build only those; lets
# a developer rebuild one kernel while another is mid-edit. Empty: build all.
BUILD_ONLY = [name for name in os.environ.get("XMLTREE_BUILD_ONLY", "").split(",") if name]
# "auto" (default): use OpenMP if the compiler can; "1": require it; "0": never.
OPENMP = os.environ.get("XMLTREE_OPENMP", "auto")
if OPENMP not in ("auto", "0", "1"):
    sys.exit(f"XMLTREE_OPENMP must be 0, 1 or auto, not {OPENMP!r}")

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
}

# Uses omp_get_max_threads so that linking proves the OpenMP runtime is found.
OPENMP_TEST_PROGRAM = """
#include <omp.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    return n == omp_get_max_threads() ? 0 : 1;
}
"""

NO_OPENMP_MESSAGE = """
*** xmltree: building WITHOUT OpenMP ({reason}).
*** The compiled kernels will run on one thread (same results, slower).
*** To get OpenMP: GCC or LLVM clang need nothing more; with Apple clang,
*** `brew install libomp` (or point LIBOMP_PREFIX at a libomp install);
*** with MSVC, /openmp is built in. Then reinstall xmltree.
"""


def find_extensions():
    """Return one Extension per ``.pyx`` file under ``xmltree/``."""
    extensions = []
    for pyx in sorted(Path("xmltree").rglob("*.pyx")):
        if BUILD_ONLY and pyx.stem not in BUILD_ONLY:
            continue
        extensions.append(
            Extension(
                ".".join(pyx.with_suffix("").parts),
                [str(pyx)],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            )
        )
    return extensions


def optimisation_flags(compiler_type):
    """Compiler flags for a release or a debug build."""
    if compiler_type == "msvc":
        # distutils already passes /Ox to MSVC.
        return ["/Od", "/Zi"] if DEBUG else []
    # No kernel reads errno; without it GCC may vectorise sqrt.
    return (["-O0", "-g"] if DEBUG else ["-O3"]) + ["-fno-math-errno"]


def openmp_candidates(compiler_type):
    """(compile flags, link flags) to try, in order, for this compiler."""
    if compiler_type == "msvc":
        return [(["/openmp"], [])]
    candidates = [(["-fopenmp"], ["-fopenmp"])]
    if sys.platform == "darwin":
        # Apple clang has no OpenMP runtime of its own but accepts the pragma
        # through its preprocessor; libomp supplies omp.h and the library.
        prefixes = [os.environ.get("LIBOMP_PREFIX", ""), "/opt/homebrew/opt/libomp",
                    "/usr/local/opt/libomp"]
        for prefix in filter(None, prefixes):
            candidates.append((
                ["-Xpreprocessor", "-fopenmp", f"-I{prefix}/include"],
                [f"-L{prefix}/lib", f"-Wl,-rpath,{prefix}/lib", "-lomp"],
            ))
    return candidates


def links_openmp_program(compiler, compile_flags, link_flags):
    """Whether ``compiler`` compiles and links the test program with these flags.

    Only compiles and links (never runs it), so that cross-compiled wheels
    are checked too.
    """
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "openmp_check.c")
        source.write_text(OPENMP_TEST_PROGRAM)
        try:
            objects = compiler.compile([str(source)], output_dir=tmp,
                                       extra_postargs=compile_flags)
            compiler.link_executable(objects, "openmp_check", output_dir=tmp,
                                     extra_postargs=link_flags)
        except (CompileError, LinkError):  # also raised for a missing compiler
            return False
    return True


def find_openmp_flags(compiler):
    """Return (compile flags, link flags) for OpenMP, or None to build without."""
    if OPENMP == "0":
        print(NO_OPENMP_MESSAGE.format(reason="XMLTREE_OPENMP=0"), file=sys.stderr)
        return None
    for compile_flags, link_flags in openmp_candidates(compiler.compiler_type):
        print(f"xmltree: checking OpenMP with {' '.join(compile_flags)} "
              "(a compiler error here only means 'no')", file=sys.stderr)
        if links_openmp_program(compiler, compile_flags, link_flags):
            print(f"xmltree: building with OpenMP ({' '.join(compile_flags)})", file=sys.stderr)
            return compile_flags, link_flags
    if OPENMP == "1":
        sys.exit("xmltree: XMLTREE_OPENMP=1 but the compiler cannot build an OpenMP program")
    print(NO_OPENMP_MESSAGE.format(reason="the compiler cannot build an OpenMP program"),
          file=sys.stderr)
    return None


class BuildExt(build_ext):
    """Cythonize and compile with the flags that this compiler supports."""

    def finalize_options(self):
        super().finalize_options()
        # Compile the extensions on all cores unless -j / --parallel says
        # otherwise: pip and `python -m build` give no way to ask for it.
        if self.parallel is None:
            self.parallel = True

    def build_extensions(self):
        # Imported here so that reading this file (e.g. to make an sdist)
        # needs neither Cython nor NumPy.
        import numpy as np
        from Cython.Build import cythonize

        openmp = find_openmp_flags(self.compiler)
        compile_flags = optimisation_flags(self.compiler.compiler_type)
        link_flags = []
        if openmp:
            compile_flags += openmp[0]
            link_flags += openmp[1]
        # cythonize returns new Extension objects; setuptools keeps state on
        # the originals, so only their sources (now .c / .cpp) are taken over.
        # cythonize compares timestamps only: a debug build (and `build_ext
        # --force`) regenerates every C file, which may have been generated
        # with the checks off.
        cythonized = {ext.name: ext for ext in cythonize(
            self.extensions, compiler_directives=COMPILER_DIRECTIVES,
            force=self.force or DEBUG)}
        for ext in self.extensions:
            ext.sources = cythonized[ext.name].sources
            ext.include_dirs.append(np.get_include())
            ext.extra_compile_args += compile_flags
            ext.extra_link_args += link_flags
        super().build_extensions()


setup(
    ext_modules=find_extensions(),
    cmdclass={"build_ext": BuildExt},
    package_data={"xmltree": ["*.pxd", "**/*.pxd"]},
)
