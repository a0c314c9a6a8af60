//! libFuzzer entry point of the `remote` target: the same function the stable driver runs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::remote::remote(data));
