"""flashinfer/utils.py's registry decorators, reduced (written for gatefix's verdict tests)."""


def supported_compute_capability(supported):
    def wrap(f):
        f.supported = supported
        return f

    return wrap


def backend_requirement(backend_checks, common_check=None, heuristic_func=None):
    def wrap(f):
        return f

    return wrap
