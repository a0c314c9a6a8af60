//! The Model Context Protocol server of `once`: JSON-RPC codec, handshake, dispatch and tool catalog.
