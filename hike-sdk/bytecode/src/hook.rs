//! Which kernel hook a chain runs at. Each hook has its own program array: a tail
//! call only reaches programs of the caller's type.

use std::fmt;

/// The kernel hook a program or loader runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    /// eXpress Data Path: the driver's receive path, before an skb exists.
    Xdp,
    /// Traffic control (tcx), on an skb.
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

/// The verdicts of each hook by name: XDP actions and TC actions (`TC_ACT_*`).
const VERDICTS: &[(Hook, &str, u32)] = &[
    (Hook::Xdp, "aborted", 0),
    (Hook::Xdp, "drop", 1),
    (Hook::Xdp, "pass", 2),
    (Hook::Xdp, "tx", 3),
    (Hook::Xdp, "redirect", 4),
    (Hook::Tc, "ok", 0),
    (Hook::Tc, "reclassify", 1),
    (Hook::Tc, "shot", 2),
    (Hook::Tc, "pipe", 3),
    (Hook::Tc, "stolen", 4),
    (Hook::Tc, "queued", 5),
    (Hook::Tc, "repeat", 6),
    (Hook::Tc, "redirect", 7),
];

impl Hook {
    /// The name of a verdict this hook's programs return (`drop`, `shot`, …).
    pub fn verdict_name(self, code: u32) -> Option<&'static str> {
        VERDICTS.iter().find(|(h, _, c)| *h == self && *c == code).map(|(_, n, _)| *n)
    }

    /// The code of a verdict by name; `pass` and `drop` are also accepted at TC
    /// (as `ok` and `shot`).
    pub fn verdict_code(self, name: &str) -> Option<u32> {
        let name = match (self, name) {
            (Hook::Tc, "pass") => "ok",
            (Hook::Tc, "drop") => "shot",
            _ => name,
        };
        VERDICTS.iter().find(|(h, n, _)| *h == self && *n == name).map(|(_, _, c)| *c)
    }

    /// Every verdict name of this hook.
    pub fn verdict_names(self) -> impl Iterator<Item = &'static str> {
        VERDICTS.iter().filter(move |(h, _, _)| *h == self).map(|(_, n, _)| *n)
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_round_trip() {
        for hook in [Hook::Xdp, Hook::Tc] {
            for name in hook.verdict_names() {
                let code = hook.verdict_code(name).unwrap();
                assert_eq!(hook.verdict_name(code), Some(name));
            }
        }
        assert_eq!(Hook::Tc.verdict_code("drop"), Some(2));
        assert_eq!(Hook::Xdp.verdict_name(9), None);
    }

    /// What serializes a hook (the manifest, the deployment journal, `hikectl
    /// status --json`) writes its name: one spelling everywhere.
    #[test]
    fn a_hook_serializes_as_its_name() {
        for hook in [Hook::Xdp, Hook::Tc] {
            assert_eq!(serde_json::to_value(hook).unwrap(), serde_json::json!(hook.name()));
            assert_eq!(serde_json::from_value::<Hook>(serde_json::json!(hook.name())).unwrap(), hook);
        }
    }
}
