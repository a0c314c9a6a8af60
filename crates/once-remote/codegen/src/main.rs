//! Regenerates the checked-in Rust code of `once-remote` from its vendored protos:
//!
//!     CARGO_TARGET_DIR=target/codegen cargo run --manifest-path crates/once-remote/codegen/Cargo.toml
//!
//! protox parses the protos in Rust (no protoc on the machine), prost-build writes one file per
//! package into `crates/once-remote/src/gen/`. It must never run as part of a normal build: the
//! output is committed so that building `once` needs neither protoc nor these crates.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let proto = crate_dir.join("proto");
    let out = crate_dir.join("src/gen");
    let files = [
        "build/bazel/remote/execution/v2/remote_execution.proto",
        "google/bytestream/bytestream.proto",
        "google/longrunning/operations.proto",
        "google/devtools/remoteworkers/v1test2/bots.proto",
    ];
    let descriptors = protox::compile(files, [&proto])?;
    prost_build::Config::new()
        .out_dir(&out)
        // Services are called by hand over h2 (`grpc.rs`); no client or server code is wanted.
        .service_generator(Box::new(NoServices))
        .compile_fds(descriptors)?;
    Ok(())
}

/// Emits nothing for services.
struct NoServices;

impl prost_build::ServiceGenerator for NoServices {
    fn generate(&mut self, _service: prost_build::Service, _buf: &mut String) {}
}
