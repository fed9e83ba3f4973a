//! The ids a HIKe VM instance gives out: a program's slot in the program array
//! (what chains call), and a chain's slot in the chain map (what loaders start).
//! Distinct types, so one is never passed where the other is meant.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A registered program's id: its slot in the hook's program array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProgId(pub u32);

/// An installed chain's id: its slot in the chain map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChainId(pub u32);

impl fmt::Display for ProgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for ChainId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
