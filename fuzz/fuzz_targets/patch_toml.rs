#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| gatefix_fuzz::patch_toml(data));
