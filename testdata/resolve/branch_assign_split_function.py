import torch


def decode(query, backend="auto"):
    """A backend chosen by the device in one statement of a big function, read in another."""
    pad_0 = [query, 0, 'padding so that this function is split into statements']
    pad_1 = [query, 1, 'padding so that this function is split into statements']
    pad_2 = [query, 2, 'padding so that this function is split into statements']
    pad_3 = [query, 3, 'padding so that this function is split into statements']
    pad_4 = [query, 4, 'padding so that this function is split into statements']
    pad_5 = [query, 5, 'padding so that this function is split into statements']
    pad_6 = [query, 6, 'padding so that this function is split into statements']
    pad_7 = [query, 7, 'padding so that this function is split into statements']
    pad_8 = [query, 8, 'padding so that this function is split into statements']
    pad_9 = [query, 9, 'padding so that this function is split into statements']
    pad_10 = [query, 10, 'padding so that this function is split into statements']
    pad_11 = [query, 11, 'padding so that this function is split into statements']
    pad_12 = [query, 12, 'padding so that this function is split into statements']
    pad_13 = [query, 13, 'padding so that this function is split into statements']
    pad_14 = [query, 14, 'padding so that this function is split into statements']
    pad_15 = [query, 15, 'padding so that this function is split into statements']
    pad_16 = [query, 16, 'padding so that this function is split into statements']
    pad_17 = [query, 17, 'padding so that this function is split into statements']
    pad_18 = [query, 18, 'padding so that this function is split into statements']
    pad_19 = [query, 19, 'padding so that this function is split into statements']
    pad_20 = [query, 20, 'padding so that this function is split into statements']
    pad_21 = [query, 21, 'padding so that this function is split into statements']
    pad_22 = [query, 22, 'padding so that this function is split into statements']
    pad_23 = [query, 23, 'padding so that this function is split into statements']
    pad_24 = [query, 24, 'padding so that this function is split into statements']
    pad_25 = [query, 25, 'padding so that this function is split into statements']
    pad_26 = [query, 26, 'padding so that this function is split into statements']
    pad_27 = [query, 27, 'padding so that this function is split into statements']
    pad_28 = [query, 28, 'padding so that this function is split into statements']
    pad_29 = [query, 29, 'padding so that this function is split into statements']
    pad_30 = [query, 30, 'padding so that this function is split into statements']
    pad_31 = [query, 31, 'padding so that this function is split into statements']
    pad_32 = [query, 32, 'padding so that this function is split into statements']
    pad_33 = [query, 33, 'padding so that this function is split into statements']
    pad_34 = [query, 34, 'padding so that this function is split into statements']
    pad_35 = [query, 35, 'padding so that this function is split into statements']
    pad_36 = [query, 36, 'padding so that this function is split into statements']
    pad_37 = [query, 37, 'padding so that this function is split into statements']
    pad_38 = [query, 38, 'padding so that this function is split into statements']
    pad_39 = [query, 39, 'padding so that this function is split into statements']
    if backend == "auto":
        cc = torch.cuda.get_device_capability()
        if cc[0] == 12:  # gate: major == 12
            backend = "sparse"
        elif cc[0] != 10:  # gate: major != 10
            backend = "xqa"
    more_0 = [query, 0, 'more padding between the choice and its use, past 4 KiB']
    more_1 = [query, 1, 'more padding between the choice and its use, past 4 KiB']
    more_2 = [query, 2, 'more padding between the choice and its use, past 4 KiB']
    more_3 = [query, 3, 'more padding between the choice and its use, past 4 KiB']
    more_4 = [query, 4, 'more padding between the choice and its use, past 4 KiB']
    more_5 = [query, 5, 'more padding between the choice and its use, past 4 KiB']
    more_6 = [query, 6, 'more padding between the choice and its use, past 4 KiB']
    more_7 = [query, 7, 'more padding between the choice and its use, past 4 KiB']
    more_8 = [query, 8, 'more padding between the choice and its use, past 4 KiB']
    more_9 = [query, 9, 'more padding between the choice and its use, past 4 KiB']
    more_10 = [query, 10, 'more padding between the choice and its use, past 4 KiB']
    more_11 = [query, 11, 'more padding between the choice and its use, past 4 KiB']
    more_12 = [query, 12, 'more padding between the choice and its use, past 4 KiB']
    more_13 = [query, 13, 'more padding between the choice and its use, past 4 KiB']
    more_14 = [query, 14, 'more padding between the choice and its use, past 4 KiB']
    more_15 = [query, 15, 'more padding between the choice and its use, past 4 KiB']
    more_16 = [query, 16, 'more padding between the choice and its use, past 4 KiB']
    more_17 = [query, 17, 'more padding between the choice and its use, past 4 KiB']
    more_18 = [query, 18, 'more padding between the choice and its use, past 4 KiB']
    more_19 = [query, 19, 'more padding between the choice and its use, past 4 KiB']
    if backend == "xqa":  # gate: `backend == "auto"` and major != 12 and major != 10 or (`backend == "auto"` and major != 12 and major == 10 or not `backend == "auto"`) and `backend == "xqa"`
        return 1
    return 0
