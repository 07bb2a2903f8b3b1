"""A minimal PEP 517 backend (standard library only) that packs src/gatefix_fixture into a
pure-Python wheel with METADATA, WHEEL and RECORD."""

import base64
import hashlib
import os
import zipfile

NAME, VERSION = "gatefix_fixture", "1.0.0"
HERE = os.path.dirname(os.path.abspath(__file__))


def _digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist_info = "%s-%s.dist-info" % (NAME, VERSION)
    files = {}
    package = os.path.join(HERE, "src", NAME)
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as f:
                files["%s/%s" % (NAME, name)] = f.read()
    files[dist_info + "/METADATA"] = (
        "Metadata-Version: 2.1\nName: gatefix-fixture\nVersion: %s\n" % VERSION
    ).encode()
    files[dist_info + "/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: build_fixture\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = "".join("%s,%s,%d\n" % (p, _digest(d), len(d)) for p, d in files.items())
    record += dist_info + "/RECORD,,\n"
    files[dist_info + "/RECORD"] = record.encode()
    wheel = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return wheel
