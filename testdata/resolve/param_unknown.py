def meets(capability):
    return capability >= 80  # gate: unknown(*capability*)
