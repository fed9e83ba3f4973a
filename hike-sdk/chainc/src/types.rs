//! The value types of the chain language and of what it calls: defined once in
//! hike-bytecode, shared with the manifest and the runtime.

pub use hike_bytecode::{AttachMode, EndsPacket, FieldType, IntType};
