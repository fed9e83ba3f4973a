//! The value types of the chain language and of what it calls.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Integer types of variables, arguments and results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
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
    pub const ALL: [IntType; 8] =
        [IntType::U8, IntType::U16, IntType::U32, IntType::U64, IntType::S8, IntType::S16, IntType::S32, IntType::S64];

    pub fn bits(self) -> u32 {
        match self {
            IntType::U8 | IntType::S8 => 8,
            IntType::U16 | IntType::S16 => 16,
            IntType::U32 | IntType::S32 => 32,
            IntType::U64 | IntType::S64 => 64,
        }
    }

    pub fn signed(self) -> bool {
        matches!(self, IntType::S8 | IntType::S16 | IntType::S32 | IntType::S64)
    }

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

impl fmt::Display for IntType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Types of loader map fields, as packages declare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldType {
    Int(IntType),
    /// A chain id; the script writes the chain's name.
    Chain,
    Ipv4,
    Ipv6,
    Mac,
    Ipv4Prefix,
    Ipv6Prefix,
}

impl FieldType {
    /// Bytes in a key or value.
    pub fn size(self) -> usize {
        match self {
            FieldType::Int(t) => t.bits() as usize / 8,
            FieldType::Chain | FieldType::Ipv4 => 4,
            FieldType::Ipv4Prefix => 8,
            FieldType::Ipv6 => 16,
            FieldType::Mac => 6,
            FieldType::Ipv6Prefix => 20,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FieldType::Int(t) => t.name(),
            FieldType::Chain => "chain",
            FieldType::Ipv4 => "ipv4",
            FieldType::Ipv6 => "ipv6",
            FieldType::Mac => "mac",
            FieldType::Ipv4Prefix => "ipv4-prefix",
            FieldType::Ipv6Prefix => "ipv6-prefix",
        }
    }
}

/// Whether a program call can end the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndsPacket {
    Never,
    #[default]
    May,
    Always,
}
