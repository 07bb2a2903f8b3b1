"""A chain of locals, each bound on two branches the configuration chooses, read past the
depth limit: every value near the end of the chain is cut short, and each was once worked out
again at every read (twice per link, so 2**n times), until the step budget ran out."""
import torch


def schedule(n, fast):
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
    r13 = r12
    if fast:
        r13 = r12 + 13
    r14 = r13
    if n > 14:
        r14 = r13 + 14
    r15 = r14
    if fast:
        r15 = r14 + 15
    r16 = r15
    if n > 16:
        r16 = r15 + 16
    r17 = r16
    if fast:
        r17 = r16 + 17
    r18 = r17
    if n > 18:
        r18 = r17 + 18
    r19 = r18
    if fast:
        r19 = r18 + 19
    r20 = r19
    if n > 20:
        r20 = r19 + 20
    r21 = r20
    if fast:
        r21 = r20 + 21
    r22 = r21
    if n > 22:
        r22 = r21 + 22
    r23 = r22
    if fast:
        r23 = r22 + 23
    r24 = r23
    if n > 24:
        r24 = r23 + 24
    if major == 10 and r24 > 4:  # gate: major == 10 and *
        return "fast"
    return "slow"
