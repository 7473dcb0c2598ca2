"""Placeholder: being written (dataset registry and downloader)."""

DATASETS = {}


def _todo(*args, **kwargs):
    raise NotImplementedError


load_dataset = get_data_home = _todo
