//! Files that come from outside the process or go to places others read: bounded
//! reads that never trust what is at a path ([`read`]), and writes that readers
//! never see half-done and a crash never leaves torn ([`write`]), with temporary
//! names that say which process wrote them ([`temp`]), and the check that a
//! directory is private to the caller ([`private`]).

pub mod private;
pub mod read;
pub mod temp;
pub mod write;

pub use read::{Capped, ReadError, Regular, check_regular, kind_name, open, read, read_text};
pub use write::{create_dirs, sync_dir, write_atomic, write_atomic_with, write_replacing};
