//! libFuzzer entry point of the `http` target: the same function the stable driver runs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| once_fuzz::http::http(data));
