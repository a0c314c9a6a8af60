//! The typed build graph of a `once` workspace: manifest parsing, kinds and their schemas, validation, the graph and its queries.
