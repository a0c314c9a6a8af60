//! The Rust types of the vendored protos (`proto/`), generated once by `codegen/` and checked in so
//! that the build needs no protoc. Edit the protos and rerun the generator, never the `gen/` files.

#![allow(clippy::all, dead_code, missing_debug_implementations, missing_docs)]

pub mod google {
    pub mod rpc {
        include!("gen/google.rpc.rs");
    }
    pub mod bytestream {
        include!("gen/google.bytestream.rs");
    }
    pub mod longrunning {
        include!("gen/google.longrunning.rs");
    }
    pub mod devtools {
        pub mod remoteworkers {
            pub mod v1test2 {
                include!("gen/google.devtools.remoteworkers.v1test2.rs");
            }
        }
    }
}

pub mod build {
    pub mod bazel {
        pub mod semver {
            include!("gen/build.bazel.semver.rs");
        }
        pub mod remote {
            pub mod execution {
                pub mod v2 {
                    include!("gen/build.bazel.remote.execution.v2.rs");
                }
            }
        }
    }
}
