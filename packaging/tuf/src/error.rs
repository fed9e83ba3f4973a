//! Why metadata was refused or could not be written, in the attacker's terms
//! where TUF names them.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {cause}")]
    Io { what: String, cause: std::io::Error },

    #[error("{path}: {problem}")]
    BadFile { path: PathBuf, problem: String },

    #[error(
        "rollback: the registry serves {role} version {offered}, older than version {trusted} this machine already \
         trusted; someone is replaying old metadata (or the registry was restored from a backup)"
    )]
    Rollback { role: String, trusted: u64, offered: u64 },

    #[error(
        "freeze: the registry's {role} metadata has expired ({detail}); someone may be withholding updates, or the \
         registry's operator has not re-signed it (`ebpkg registry tuf-refresh`)"
    )]
    Expired { role: String, detail: String },

    #[error("the registry's {role} metadata is not signed by the keys this machine trusts for it: {detail}")]
    BadSignature { role: String, detail: String },

    #[error("the registry's metadata is larger than allowed ({detail}); refusing endless data")]
    TooLarge { detail: String },

    #[error(
        "{target} does not match the registry's signed metadata (expected SHA-256 {expected}, {expected_len} bytes; \
         got {actual}, {actual_len} bytes): the file was changed, or comes from another snapshot (mix-and-match)"
    )]
    Mismatch { target: String, expected: String, expected_len: u64, actual: String, actual_len: u64 },

    #[error("{target} is not in the registry's signed metadata: it was not published through the registry")]
    NotListed { target: String },

    #[error("the registry's metadata could not be fetched: {detail}")]
    Unavailable { detail: String },

    #[error("TUF metadata: {detail}")]
    Metadata { detail: String },

    #[error(
        "this machine's clock ({now}) is behind the time an earlier command saw ({recorded}), recorded in {}: either \
         the clock was set back, which a freeze attack (replaying expired metadata) relies on, or an earlier command \
         ran with the clock ahead. If the clock is right now (see `timedatectl`), run `ebpkg doctor --fix`: it \
         forgets the recorded time",
        file.display()
    )]
    ClockBehind { file: PathBuf, recorded: String, now: String },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Sorts a `tough` error into what it means for the user.
    pub(crate) fn from_tough(e: tough::error::Error) -> Error {
        use tough::error::Error as T;
        let detail = e.to_string();
        // A check made while streaming a file (its size, its hash) comes back
        // wrapped in a transport error: what it found is what matters.
        if let T::Transport { source, .. } = &e {
            let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(source);
            while let Some(c) = cause {
                if let Some(inner) = c.downcast_ref::<T>() {
                    match inner {
                        T::MaxSizeExceeded { .. } => return Error::TooLarge { detail },
                        T::HashMismatch { .. } => {
                            return Error::Metadata {
                                detail: format!(
                                    "a file does not match the hash signed metadata gives for it (mix-and-match or \
                                     tampering): {detail}"
                                ),
                            };
                        }
                        _ => {}
                    }
                }
                cause = c.source();
            }
            if matches!(source.kind(), tough::TransportErrorKind::FileNotFound) {
                return Error::Unavailable { detail };
            }
        }
        match e {
            T::OlderMetadata { role, current_version, new_version, .. } => {
                Error::Rollback { role: role.to_string(), trusted: current_version, offered: new_version }
            }
            T::SnapshotRoleRollback { .. } | T::OlderSnapshotInTimestamp { .. } => {
                Error::Rollback { role: "snapshot".into(), trusted: 0, offered: 0 }.with_detail(detail)
            }
            T::ExpiredMetadata { role, .. } => Error::Expired { role: role.to_string(), detail },
            T::VerifyMetadata { role, .. } => Error::BadSignature { role: role.to_string(), detail },
            T::VerifyRoleMetadata { role, .. } => Error::BadSignature { role, detail },
            T::VerifyTrustedMetadata { .. } => Error::BadSignature { role: "root".into(), detail },
            T::MaxSizeExceeded { .. } | T::MaxUpdatesExceeded { .. } => Error::TooLarge { detail },
            T::HashMismatch { .. } | T::VersionMismatch { .. } => Error::Metadata { detail },
            T::Transport { .. } => Error::Unavailable { detail },
            _ => Error::Metadata { detail },
        }
    }

    /// A rollback whose versions only `tough`'s message states.
    fn with_detail(self, detail: String) -> Error {
        match self {
            Error::Rollback { .. } => Error::Metadata { detail: format!("rollback: {detail}") },
            other => other,
        }
    }
}
