//! libFuzzer entry point of the `mcp` target: the same function the stable driver runs.
#![no_main]

libfuzzer_sys::fuzz_target!(
    init: {
        // libFuzzer's hook aborts on every panic; the server catches the one its test tool
        // raises on purpose, so that one must not end the run.
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&once_fuzz::mcp::ON_PURPOSE) {
                abort(info);
            }
        }));
    },
    |data: &[u8]| once_fuzz::mcp::mcp(data)
);
