"""A value cut short by the depth limit, read again in the same condition after what it
needs was kept: the chain of locals read from its top goes past the limit; the condition then
reads the links one by one from the bottom, each kept, and the top again, which is now worked
out whole. A replay of the first, cut value there would give the cut instead (a replay needs
nothing kept since: `resolve::Stance`). One function per chain length, since where the cut
falls depends on how deep each link reads."""
import torch


def chain_8(n, fast):
    major = torch.cuda.get_device_capability()[0]
    r0 = n
    r1 = r0
    if fast:
        r1 = r0 + 1
    r2 = r1
    if n > 2:
        r2 = r1 + 2
    r3 = r2
    if fast:
        r3 = r2 + 3
    r4 = r3
    if n > 4:
        r4 = r3 + 4
    r5 = r4
    if fast:
        r5 = r4 + 5
    r6 = r5
    if n > 6:
        r6 = r5 + 6
    r7 = r6
    if fast:
        r7 = r6 + 7
    r8 = r7
    if n > 8:
        r8 = r7 + 8
    if major == 10 and (  # gate: major == 10 and *
        r8 > 9 or
        r1 > 9 or
        r2 > 9 or
        r3 > 9 or
        r4 > 9 or
        r5 > 9 or
        r6 > 9 or
        r7 > 9 or
        r8 > 9
    ):
        return "fast"
    return "slow"

def chain_10(n, fast):
    major = torch.cuda.get_device_capability()[0]
    r0 = n
    r1 = r0
    if fast:
        r1 = r0 + 1
    r2 = r1
    if n > 2:
        r2 = r1 + 2
    r3 = r2
    if fast:
        r3 = r2 + 3
    r4 = r3
    if n > 4:
        r4 = r3 + 4
    r5 = r4
    if fast:
        r5 = r4 + 5
    r6 = r5
    if n > 6:
        r6 = r5 + 6
    r7 = r6
    if fast:
        r7 = r6 + 7
    r8 = r7
    if n > 8:
        r8 = r7 + 8
    r9 = r8
    if fast:
        r9 = r8 + 9
    r10 = r9
    if n > 10:
        r10 = r9 + 10
    if major == 10 and (  # gate: major == 10 and *
        r10 > 9 or
        r1 > 9 or
        r2 > 9 or
        r3 > 9 or
        r4 > 9 or
        r5 > 9 or
        r6 > 9 or
        r7 > 9 or
        r8 > 9 or
        r9 > 9 or
        r10 > 9
    ):
        return "fast"
    return "slow"

def chain_12(n, fast):
    major = torch.cuda.get_device_capability()[0]
    r0 = n
    r1 = r0
    if fast:
        r1 = r0 + 1
    r2 = r1
    if n > 2:
        r2 = r1 + 2
    r3 = r2
    if fast:
        r3 = r2 + 3
    r4 = r3
    if n > 4:
        r4 = r3 + 4
    r5 = r4
    if fast:
        r5 = r4 + 5
    r6 = r5
    if n > 6:
        r6 = r5 + 6
    r7 = r6
    if fast:
        r7 = r6 + 7
    r8 = r7
    if n > 8:
        r8 = r7 + 8
    r9 = r8
    if fast:
        r9 = r8 + 9
    r10 = r9
    if n > 10:
        r10 = r9 + 10
    r11 = r10
    if fast:
        r11 = r10 + 11
    r12 = r11
    if n > 12:
        r12 = r11 + 12
    if major == 10 and (  # gate: major == 10 and *
        r12 > 9 or
        r1 > 9 or
        r2 > 9 or
        r3 > 9 or
        r4 > 9 or
        r5 > 9 or
        r6 > 9 or
        r7 > 9 or
        r8 > 9 or
        r9 > 9 or
        r10 > 9 or
        r11 > 9 or
        r12 > 9
    ):
        return "fast"
    return "slow"
