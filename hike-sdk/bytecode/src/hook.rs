//! Which kernel hook a chain runs at. Each hook has its own program array: a tail
//! call only reaches programs of the caller's type.

use std::fmt;

/// An attachment hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    /// XDP: the driver's receive path.
    Xdp,
    /// TC (tcx), on an skb.
    Tc,
}

impl Hook {
    /// `xdp` or `tc`.
    pub fn name(self) -> &'static str {
        match self {
            Hook::Xdp => "xdp",
            Hook::Tc => "tc",
        }
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
