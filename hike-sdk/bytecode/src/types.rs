//! The value types HIKe programs, loaders and chains share, defined once: the
//! manifest (ebpkg-spec) declares them, the chain compiler checks calls and
//! loader maps against them, the deployer and the runtime act on them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Hook;

/// Integer types of program arguments, return values and chain variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum IntType {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
}

impl IntType {
    /// Every integer type, in declaration order.
    pub const ALL: [IntType; 8] =
        [IntType::U8, IntType::U16, IntType::U32, IntType::U64, IntType::S8, IntType::S16, IntType::S32, IntType::S64];

    /// Width in bits.
    pub fn bits(self) -> u32 {
        match self {
            IntType::U8 | IntType::S8 => 8,
            IntType::U16 | IntType::S16 => 16,
            IntType::U32 | IntType::S32 => 32,
            IntType::U64 | IntType::S64 => 64,
        }
    }

    /// Whether values are two's-complement signed.
    pub fn signed(self) -> bool {
        matches!(self, IntType::S8 | IntType::S16 | IntType::S32 | IntType::S64)
    }

    /// The spelling in manifests and chain scripts.
    pub fn name(self) -> &'static str {
        match self {
            IntType::U8 => "u8",
            IntType::U16 => "u16",
            IntType::U32 => "u32",
            IntType::U64 => "u64",
            IntType::S8 => "s8",
            IntType::S16 => "s16",
            IntType::S32 => "s32",
            IntType::S64 => "s64",
        }
    }

    /// The type spelled `s`.
    pub fn from_name(s: &str) -> Option<IntType> {
        IntType::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The smallest and largest value, as i128 so both signednesses fit.
    pub fn range(self) -> (i128, i128) {
        let b = self.bits();
        if self.signed() { (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1) } else { (0, (1i128 << b) - 1) }
    }

    /// `v` (a 64-bit pattern) converted to this type: truncated, then zero- or
    /// sign-extended back to 64 bits.
    pub fn convert(self, v: u64) -> u64 {
        let b = self.bits();
        if b == 64 {
            return v;
        }
        let shift = 64 - b;
        if self.signed() { (((v << shift) as i64) >> shift) as u64 } else { v & ((1u64 << b) - 1) }
    }
}

impl FromStr for IntType {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        IntType::from_name(s).ok_or(())
    }
}

impl fmt::Display for IntType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Types of the fields of map keys and values, as a chain script writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum FieldType {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    /// The id of an installed chain; a chain script writes the chain's name. 4 bytes.
    Chain,
    /// An IPv4 address in network byte order, written `"192.0.2.1"`. 4 bytes.
    Ipv4,
    /// An IPv6 address in network byte order, written `"2001:db8::1"`. 16 bytes.
    Ipv6,
    /// An Ethernet address, written `"02:00:00:00:00:01"`. 6 bytes.
    Mac,
    /// An LPM-trie key: a u32 prefix length then the IPv4 address, written `"192.0.2.0/24"`. 8 bytes.
    Ipv4Prefix,
    /// An LPM-trie key: a u32 prefix length then the IPv6 address, written `"2001:db8::/32"`. 20 bytes.
    Ipv6Prefix,
}

impl FieldType {
    /// Every field type, in declaration order.
    pub const ALL: [FieldType; 14] = [
        FieldType::U8,
        FieldType::U16,
        FieldType::U32,
        FieldType::U64,
        FieldType::S8,
        FieldType::S16,
        FieldType::S32,
        FieldType::S64,
        FieldType::Chain,
        FieldType::Ipv4,
        FieldType::Ipv6,
        FieldType::Mac,
        FieldType::Ipv4Prefix,
        FieldType::Ipv6Prefix,
    ];

    /// The field type of an integer type.
    pub fn of_int(t: IntType) -> FieldType {
        match t {
            IntType::U8 => FieldType::U8,
            IntType::U16 => FieldType::U16,
            IntType::U32 => FieldType::U32,
            IntType::U64 => FieldType::U64,
            IntType::S8 => FieldType::S8,
            IntType::S16 => FieldType::S16,
            IntType::S32 => FieldType::S32,
            IntType::S64 => FieldType::S64,
        }
    }

    /// The integer type, when this is one.
    pub fn int(self) -> Option<IntType> {
        Some(match self {
            FieldType::U8 => IntType::U8,
            FieldType::U16 => IntType::U16,
            FieldType::U32 => IntType::U32,
            FieldType::U64 => IntType::U64,
            FieldType::S8 => IntType::S8,
            FieldType::S16 => IntType::S16,
            FieldType::S32 => IntType::S32,
            FieldType::S64 => IntType::S64,
            _ => return None,
        })
    }

    /// Size in bytes inside a key or value.
    pub fn size(self) -> usize {
        match self {
            FieldType::U8 | FieldType::S8 => 1,
            FieldType::U16 | FieldType::S16 => 2,
            FieldType::U32 | FieldType::S32 | FieldType::Chain | FieldType::Ipv4 => 4,
            FieldType::U64 | FieldType::S64 | FieldType::Ipv4Prefix => 8,
            FieldType::Ipv6 => 16,
            FieldType::Mac => 6,
            FieldType::Ipv6Prefix => 20,
        }
    }

    /// The spelling in manifests.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Chain => "chain",
            FieldType::Ipv4 => "ipv4",
            FieldType::Ipv6 => "ipv6",
            FieldType::Mac => "mac",
            FieldType::Ipv4Prefix => "ipv4-prefix",
            FieldType::Ipv6Prefix => "ipv6-prefix",
            other => other.int().map_or("", IntType::name),
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether calling a program can end the packet (drop, pass, tx, redirect, abort)
/// instead of handing control back to the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum EndsPacket {
    /// Always returns to the chain.
    Never,
    /// Returns to the chain or ends the packet, depending on the packet.
    #[default]
    May,
    /// Always ends the packet; code after the call in a chain never runs.
    Always,
}

impl EndsPacket {
    /// The spelling in manifests (`ends_packet = "never"`).
    pub fn name(self) -> &'static str {
        match self {
            EndsPacket::Never => "never",
            EndsPacket::May => "may",
            EndsPacket::Always => "always",
        }
    }

    /// What it means for a chain that calls the program, in words.
    pub fn meaning(self) -> &'static str {
        match self {
            EndsPacket::Never => "it always returns to the chain",
            EndsPacket::May => "depending on the packet it returns to the chain or ends the packet",
            EndsPacket::Always => "code after the call in a chain never runs",
        }
    }
}

impl fmt::Display for EndsPacket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a loader is attached to an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AttachMode {
    /// XDP in the driver when it supports it, generic (skb) XDP otherwise.
    Xdp,
    /// XDP in the driver only.
    XdpDriver,
    /// Generic (skb) XDP only.
    XdpGeneric,
    /// tcx on the ingress path.
    TcIngress,
    /// tcx on the egress path.
    TcEgress,
}

impl AttachMode {
    pub const ALL: [AttachMode; 5] =
        [AttachMode::Xdp, AttachMode::XdpDriver, AttachMode::XdpGeneric, AttachMode::TcIngress, AttachMode::TcEgress];

    /// The name chain scripts, records and `status` use.
    pub fn name(self) -> &'static str {
        match self {
            AttachMode::Xdp => "xdp",
            AttachMode::XdpDriver => "xdpdrv",
            AttachMode::XdpGeneric => "xdpgeneric",
            AttachMode::TcIngress => "tc",
            AttachMode::TcEgress => "tc-egress",
        }
    }

    /// The mode with this name.
    pub fn from_name(s: &str) -> Option<AttachMode> {
        AttachMode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The hook the mode belongs to.
    pub fn hook(self) -> Hook {
        match self {
            AttachMode::Xdp | AttachMode::XdpDriver | AttachMode::XdpGeneric => Hook::Xdp,
            AttachMode::TcIngress | AttachMode::TcEgress => Hook::Tc,
        }
    }

    /// The modes a loader of `hook` can attach in.
    pub fn of_hook(hook: Hook) -> impl Iterator<Item = AttachMode> {
        AttachMode::ALL.into_iter().filter(move |m| m.hook() == hook)
    }

    /// Where on an interface the mode attaches: the XDP modes share one place
    /// (an interface has one XDP program); TC ingress and egress are two.
    pub fn attach_point(self) -> &'static str {
        match self {
            AttachMode::Xdp | AttachMode::XdpDriver | AttachMode::XdpGeneric => "xdp",
            AttachMode::TcIngress => "tc-ingress",
            AttachMode::TcEgress => "tc-egress",
        }
    }
}

impl fmt::Display for AttachMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for AttachMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for AttachMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AttachMode::from_name(&s).ok_or_else(|| {
            let known: Vec<_> = AttachMode::ALL.iter().map(|m| m.name()).collect();
            serde::de::Error::custom(format!("`{s}` is not an attach mode ({})", known.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in IntType::ALL {
            assert_eq!(IntType::from_name(t.name()), Some(t));
            assert_eq!(FieldType::of_int(t).int(), Some(t));
            assert_eq!(FieldType::of_int(t).size() * 8, t.bits() as usize);
        }
        for f in FieldType::ALL {
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{}\"", f.name()));
        }
        for m in AttachMode::ALL {
            assert_eq!(AttachMode::from_name(m.name()), Some(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<AttachMode>(&json).unwrap(), m);
            assert!(AttachMode::of_hook(m.hook()).any(|x| x == m));
        }
        assert!(serde_json::from_str::<AttachMode>("\"xdp-offload\"").is_err());
        assert_eq!(AttachMode::XdpGeneric.attach_point(), AttachMode::Xdp.attach_point());
        assert_ne!(AttachMode::TcIngress.attach_point(), AttachMode::TcEgress.attach_point());
    }

    #[test]
    fn conversions() {
        assert_eq!(IntType::S8.convert(0xff), u64::MAX);
        assert_eq!(IntType::U8.convert(0x1ff), 0xff);
        assert_eq!(IntType::S16.range(), (-32768, 32767));
    }
}
