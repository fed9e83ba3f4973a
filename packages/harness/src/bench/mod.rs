//! The data-plane benchmark behind `./ci/bench`: MMLF three ways and the cost of a
//! program call, measured side by side, interleaved, reported as ratios.

pub mod calls;
pub mod mmlf;
pub mod report;
pub mod stats;
