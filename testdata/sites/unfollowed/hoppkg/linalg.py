"""A site function (written for gatefix's tests) that shares its name with torch's: `torch.matmul(...)` is not this."""


def matmul(a, b):
    return a
