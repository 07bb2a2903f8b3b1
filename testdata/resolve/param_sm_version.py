def pick(sm_version):
    return sm_version >= 100  # gate(assumes sm_version): sm >= 100
