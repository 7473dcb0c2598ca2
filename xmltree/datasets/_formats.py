"""Placeholder: being written (readers and writers of XMC file formats)."""


def _todo(*args, **kwargs):
    raise NotImplementedError


read_xc = write_xc = read_xc_split = read_bow_pair = read_libsvm = read_arff = _todo
