"""Placeholder: being written (synthetic multi-label data)."""


def make_synthetic(*args, **kwargs):
    raise NotImplementedError
