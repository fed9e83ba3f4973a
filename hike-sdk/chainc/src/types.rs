//! The value types of the chain language and of what it calls (defined once in
//! hike-bytecode, shared with the manifest and the runtime), and the names the
//! language keeps for itself.

pub use hike_bytecode::{AttachMode, EndsPacket, FieldType, IntType};

/// Names the language gives a meaning: they name no chain or variable.
pub const BUILT_INS: &[&str] = &["packet", "scratch", "range"];
