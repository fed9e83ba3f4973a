//! The data-plane benchmark behind `./ci/bench`: MMLF four ways, the cost of a
//! program call, measured side by side, interleaved, reported as ratios; and the
//! time a chain takes to go native.

pub mod calls;
pub mod cli;
pub mod install;
pub mod mmlf;
pub mod process;
pub mod report;
pub mod resolve;
pub mod stats;
pub mod tierup;
pub mod upgrade;
