//! Running a step inside a named network namespace (`ip netns add NAME`): only
//! attaching needs it (interface names are looked up there); links, once made,
//! are reached through their pins from anywhere.

use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;

use crate::error::{DeployError, Result};

/// Where `ip netns` keeps named namespaces.
const NETNS_DIR: &str = "/var/run/netns";

/// Runs `f` in network namespace `name` (or right here when `None` or when this
/// thread is already in it).
pub fn run_in<T: Send>(name: Option<&str>, f: impl FnOnce() -> T + Send) -> Result<T> {
    let Some(name) = name else { return Ok(f()) };
    let bad = |reason: String| DeployError::Netns { name: name.to_owned(), reason };
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(bad("not a namespace name".into()));
    }
    let path = std::path::Path::new(NETNS_DIR).join(name);
    let file = std::fs::File::open(&path)
        .map_err(|e| bad(format!("{}: {e} (create it with `ip netns add {name}`)", path.display())))?;
    let target = file.metadata().map_err(|e| bad(e.to_string()))?;
    if let Ok(own) = std::fs::metadata("/proc/thread-self/ns/net")
        && own.dev() == target.dev()
        && own.ino() == target.ino()
    {
        return Ok(f());
    }
    // setns changes only the calling thread: do the work on a thread of its own so
    // the rest of the process stays where it was.
    std::thread::scope(|s| {
        s.spawn(move || {
            rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network))
                .map_err(|e| bad(format!("setns: {e}")))?;
            Ok(f())
        })
        .join()
        .map_err(|_| bad("the thread doing the work panicked".into()))?
    })
}
