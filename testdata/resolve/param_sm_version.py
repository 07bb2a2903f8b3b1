def pick(sm_version):
    return sm_version >= 100  # gate(assumes sm_version is the device's): sm >= 100
