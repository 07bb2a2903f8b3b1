def ok(compute_capability):
    return compute_capability in (90, 100)  # gate(assumes compute_capability is the device's): sm in {90, 100}
