//! hike-native's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p hike-native --test it worst::`.

mod worst;
