from utils import get_device_capability


# Methods that read the device, called through `cls.` / `self.` in their class, before or
# after their definition. The class is big enough to be split into its methods.
class Platform:
    def later_user(self):
        if self.faster():  # gate: major >= 10
            return 1
        return 0

    @classmethod
    def supports_fp8(cls):
        return get_device_capability()[0] >= 9  # gate: major >= 9

    @classmethod
    def kv_supported(cls, backend):
        supported = False
        if backend == "triton":
            supported = cls.supports_fp8()  # gate: major >= 9
        return supported

    def faster(self):
        return get_device_capability()[0] >= 10  # gate: major >= 10

    def plain(self):
        return 3

    def plain_user(self):
        if self.plain():  # no-gate
            return 1
        return 0

    def filler(self, step):
        total = 0
        total = total + len(str(step)) * 0
        total = total + len(str(step)) * 1
        total = total + len(str(step)) * 2
        total = total + len(str(step)) * 3
        total = total + len(str(step)) * 4
        total = total + len(str(step)) * 5
        total = total + len(str(step)) * 6
        total = total + len(str(step)) * 7
        total = total + len(str(step)) * 8
        total = total + len(str(step)) * 9
        total = total + len(str(step)) * 10
        total = total + len(str(step)) * 11
        total = total + len(str(step)) * 12
        total = total + len(str(step)) * 13
        total = total + len(str(step)) * 14
        total = total + len(str(step)) * 15
        total = total + len(str(step)) * 16
        total = total + len(str(step)) * 17
        total = total + len(str(step)) * 18
        total = total + len(str(step)) * 19
        total = total + len(str(step)) * 20
        total = total + len(str(step)) * 21
        total = total + len(str(step)) * 22
        total = total + len(str(step)) * 23
        total = total + len(str(step)) * 24
        total = total + len(str(step)) * 25
        total = total + len(str(step)) * 26
        total = total + len(str(step)) * 27
        total = total + len(str(step)) * 28
        total = total + len(str(step)) * 29
        total = total + len(str(step)) * 30
        total = total + len(str(step)) * 31
        total = total + len(str(step)) * 32
        total = total + len(str(step)) * 33
        total = total + len(str(step)) * 34
        total = total + len(str(step)) * 35
        total = total + len(str(step)) * 36
        total = total + len(str(step)) * 37
        total = total + len(str(step)) * 38
        total = total + len(str(step)) * 39
        total = total + len(str(step)) * 40
        total = total + len(str(step)) * 41
        total = total + len(str(step)) * 42
        total = total + len(str(step)) * 43
        total = total + len(str(step)) * 44
        total = total + len(str(step)) * 45
        total = total + len(str(step)) * 46
        total = total + len(str(step)) * 47
        total = total + len(str(step)) * 48
        total = total + len(str(step)) * 49
        total = total + len(str(step)) * 50
        total = total + len(str(step)) * 51
        total = total + len(str(step)) * 52
        total = total + len(str(step)) * 53
        total = total + len(str(step)) * 54
        total = total + len(str(step)) * 55
        total = total + len(str(step)) * 56
        total = total + len(str(step)) * 57
        total = total + len(str(step)) * 58
        total = total + len(str(step)) * 59
        total = total + len(str(step)) * 60
        total = total + len(str(step)) * 61
        total = total + len(str(step)) * 62
        total = total + len(str(step)) * 63
        total = total + len(str(step)) * 64
        total = total + len(str(step)) * 65
        total = total + len(str(step)) * 66
        total = total + len(str(step)) * 67
        total = total + len(str(step)) * 68
        total = total + len(str(step)) * 69
        total = total + len(str(step)) * 70
        total = total + len(str(step)) * 71
        total = total + len(str(step)) * 72
        total = total + len(str(step)) * 73
        total = total + len(str(step)) * 74
        total = total + len(str(step)) * 75
        total = total + len(str(step)) * 76
        total = total + len(str(step)) * 77
        total = total + len(str(step)) * 78
        total = total + len(str(step)) * 79
        total = total + len(str(step)) * 80
        total = total + len(str(step)) * 81
        total = total + len(str(step)) * 82
        total = total + len(str(step)) * 83
        total = total + len(str(step)) * 84
        total = total + len(str(step)) * 85
        total = total + len(str(step)) * 86
        total = total + len(str(step)) * 87
        total = total + len(str(step)) * 88
        total = total + len(str(step)) * 89
        total = total + len(str(step)) * 90
        total = total + len(str(step)) * 91
        total = total + len(str(step)) * 92
        total = total + len(str(step)) * 93
        total = total + len(str(step)) * 94
        total = total + len(str(step)) * 95
        total = total + len(str(step)) * 96
        total = total + len(str(step)) * 97
        total = total + len(str(step)) * 98
        total = total + len(str(step)) * 99
        total = total + len(str(step)) * 100
        total = total + len(str(step)) * 101
        total = total + len(str(step)) * 102
        total = total + len(str(step)) * 103
        total = total + len(str(step)) * 104
        total = total + len(str(step)) * 105
        total = total + len(str(step)) * 106
        total = total + len(str(step)) * 107
        total = total + len(str(step)) * 108
        total = total + len(str(step)) * 109
        total = total + len(str(step)) * 110
        total = total + len(str(step)) * 111
        total = total + len(str(step)) * 112
        total = total + len(str(step)) * 113
        total = total + len(str(step)) * 114
        total = total + len(str(step)) * 115
        total = total + len(str(step)) * 116
        total = total + len(str(step)) * 117
        total = total + len(str(step)) * 118
        total = total + len(str(step)) * 119
        return total
