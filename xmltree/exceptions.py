"""Exceptions raised by xmltree.

Every problem with user-supplied files or arrays is reported through one of
these classes, so that callers can catch them precisely; both derive from
:class:`ValueError` so that generic input-validation handlers keep working.
"""

from __future__ import annotations

__all__ = ["DataFormatError", "ModelFormatError", "NotFittedError"]


class DataFormatError(ValueError):
    """A data file (or in-memory data) is malformed.

    Parameters
    ----------
    problem : str
        What is wrong, in words a user can act on.
    path : str or os.PathLike, optional
        The file being read, if any.
    line : int, optional
        1-based line number in ``path`` where the problem was found.

    Attributes
    ----------
    problem, path, line : as above; ``path`` is a ``str`` or ``None``.
    """

    def __init__(self, problem: str, path=None, line: int | None = None):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}, line {line}"
        elif line is not None:
            where = f"line {line}"
        super().__init__(f"{where}: {problem}" if where else problem)

    def __reduce__(self):
        # Keep the structured fields when the exception crosses process
        # boundaries (joblib workers pickle exceptions back to the parent).
        return (type(self), (self.problem, self.path, self.line))


class ModelFormatError(ValueError):
    """A saved model file is corrupt, truncated, or of an unsupported version."""


class NotFittedError(ValueError, AttributeError):
    """An estimator was used for prediction or saved before being fitted.

    Derives from both :class:`ValueError` and :class:`AttributeError`, as
    scikit-learn's exception of the same name does, so existing handlers for
    either keep working.
    """
