#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| gatefix_fuzz::kernel_bytes(data));
