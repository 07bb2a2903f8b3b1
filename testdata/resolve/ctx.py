import contextlib


@contextlib.contextmanager
def opened(path):
    with open(path) as handle:
        yield handle.read()
