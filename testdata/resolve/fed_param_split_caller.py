"""A method handed the device's major by a caller too big to parse whole, from a plain call
statement deep in its branches (sglang 0.5.13 server_args.py `_handle_model_specific_adjustments`:
`major, _ = torch.cuda.get_device_capability()` then
`self._set_default_dsa_kv_cache_dtype(major, self.quantization)`). The chunking must keep the
call, whose argument feeds the parameter, although it holds no token and no `if`.
"""
import torch


class ServerArgs:
    def _set_default_kv_cache_dtype(self, major: int, quantization: str):
        if self.kv_cache_dtype == "auto":
            if major >= 10:  # gate: major >= 10
                self.kv_cache_dtype = "fp8_e4m3"
            else:
                self.kv_cache_dtype = "bfloat16"
        if quantization == "fp8":  # no-gate
            self.kv_cache_dtype = "fp8_e4m3"

    def _handle_model_specific_adjustments(self):
        if self.model_arch in ["DeepseekV32ForCausalLM"]:
            if self.is_dsa:
                self.x0 = self.value_0 * 2 + 0  # filler: the caller must be split (over 4 KB)
                self.x1 = self.value_1 * 2 + 1  # filler: the caller must be split (over 4 KB)
                self.x2 = self.value_2 * 2 + 2  # filler: the caller must be split (over 4 KB)
                self.x3 = self.value_3 * 2 + 3  # filler: the caller must be split (over 4 KB)
                self.x4 = self.value_4 * 2 + 4  # filler: the caller must be split (over 4 KB)
                self.x5 = self.value_5 * 2 + 5  # filler: the caller must be split (over 4 KB)
                self.x6 = self.value_6 * 2 + 6  # filler: the caller must be split (over 4 KB)
                self.x7 = self.value_7 * 2 + 7  # filler: the caller must be split (over 4 KB)
                self.x8 = self.value_8 * 2 + 8  # filler: the caller must be split (over 4 KB)
                self.x9 = self.value_9 * 2 + 9  # filler: the caller must be split (over 4 KB)
                self.x10 = self.value_10 * 2 + 10  # filler: the caller must be split (over 4 KB)
                self.x11 = self.value_11 * 2 + 11  # filler: the caller must be split (over 4 KB)
                self.x12 = self.value_12 * 2 + 12  # filler: the caller must be split (over 4 KB)
                self.x13 = self.value_13 * 2 + 13  # filler: the caller must be split (over 4 KB)
                self.x14 = self.value_14 * 2 + 14  # filler: the caller must be split (over 4 KB)
                self.x15 = self.value_15 * 2 + 15  # filler: the caller must be split (over 4 KB)
                self.x16 = self.value_16 * 2 + 16  # filler: the caller must be split (over 4 KB)
                self.x17 = self.value_17 * 2 + 17  # filler: the caller must be split (over 4 KB)
                self.x18 = self.value_18 * 2 + 18  # filler: the caller must be split (over 4 KB)
                self.x19 = self.value_19 * 2 + 19  # filler: the caller must be split (over 4 KB)
                self.x20 = self.value_20 * 2 + 20  # filler: the caller must be split (over 4 KB)
                self.x21 = self.value_21 * 2 + 21  # filler: the caller must be split (over 4 KB)
                self.x22 = self.value_22 * 2 + 22  # filler: the caller must be split (over 4 KB)
                self.x23 = self.value_23 * 2 + 23  # filler: the caller must be split (over 4 KB)
                self.x24 = self.value_24 * 2 + 24  # filler: the caller must be split (over 4 KB)
                self.x25 = self.value_25 * 2 + 25  # filler: the caller must be split (over 4 KB)
                self.x26 = self.value_26 * 2 + 26  # filler: the caller must be split (over 4 KB)
                self.x27 = self.value_27 * 2 + 27  # filler: the caller must be split (over 4 KB)
                self.x28 = self.value_28 * 2 + 28  # filler: the caller must be split (over 4 KB)
                self.x29 = self.value_29 * 2 + 29  # filler: the caller must be split (over 4 KB)
                self.x30 = self.value_30 * 2 + 30  # filler: the caller must be split (over 4 KB)
                self.x31 = self.value_31 * 2 + 31  # filler: the caller must be split (over 4 KB)
                self.x32 = self.value_32 * 2 + 32  # filler: the caller must be split (over 4 KB)
                self.x33 = self.value_33 * 2 + 33  # filler: the caller must be split (over 4 KB)
                self.x34 = self.value_34 * 2 + 34  # filler: the caller must be split (over 4 KB)
                self.x35 = self.value_35 * 2 + 35  # filler: the caller must be split (over 4 KB)
                self.x36 = self.value_36 * 2 + 36  # filler: the caller must be split (over 4 KB)
                self.x37 = self.value_37 * 2 + 37  # filler: the caller must be split (over 4 KB)
                self.x38 = self.value_38 * 2 + 38  # filler: the caller must be split (over 4 KB)
                self.x39 = self.value_39 * 2 + 39  # filler: the caller must be split (over 4 KB)
                self.x40 = self.value_40 * 2 + 40  # filler: the caller must be split (over 4 KB)
                self.x41 = self.value_41 * 2 + 41  # filler: the caller must be split (over 4 KB)
                self.x42 = self.value_42 * 2 + 42  # filler: the caller must be split (over 4 KB)
                self.x43 = self.value_43 * 2 + 43  # filler: the caller must be split (over 4 KB)
                self.x44 = self.value_44 * 2 + 44  # filler: the caller must be split (over 4 KB)
                self.x45 = self.value_45 * 2 + 45  # filler: the caller must be split (over 4 KB)
                self.x46 = self.value_46 * 2 + 46  # filler: the caller must be split (over 4 KB)
                self.x47 = self.value_47 * 2 + 47  # filler: the caller must be split (over 4 KB)
                self.x48 = self.value_48 * 2 + 48  # filler: the caller must be split (over 4 KB)
                self.x49 = self.value_49 * 2 + 49  # filler: the caller must be split (over 4 KB)
                major, _ = torch.cuda.get_device_capability()
                self._set_default_kv_cache_dtype(major, self.quantization)
