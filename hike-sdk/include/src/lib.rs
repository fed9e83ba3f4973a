//! The HIKe C SDK: the headers a HIKe program or loader includes (`#include
//! <hike/program.h>`), owned by this crate so that whoever uses them depends on
//! it and Cargo rebuilds them when a header changes.

use std::path::Path;

/// The headers, as `(name under hike/, contents)`, sorted by name.
pub const HEADERS: [(&str, &str); 9] = [
    ("common.h", include_str!("../hike/common.h")),
    ("defs.h", include_str!("../hike/defs.h")),
    ("loader.h", include_str!("../hike/loader.h")),
    ("maps.h", include_str!("../hike/maps.h")),
    ("native.h", include_str!("../hike/native.h")),
    ("packet.h", include_str!("../hike/packet.h")),
    ("program.h", include_str!("../hike/program.h")),
    ("time.h", include_str!("../hike/time.h")),
    ("vm.h", include_str!("../hike/vm.h")),
];

/// How SDK code is compiled for BPF (before `-D__TARGET_ARCH_<arch>`, warnings
/// and include directories): optimised (the verifier needs it), with BTF and
/// line info (`-g`: signatures are read from BTF, verifier messages name lines).
pub const CFLAGS: [&str; 4] = ["-O2", "-g", "-target", "bpf"];

/// The directory to give clang with `-I` (it holds `hike/*.h`), for build
/// scripts of this workspace.
pub fn include_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_header_is_embedded_and_sorted() {
        let mut on_disk: Vec<String> = std::fs::read_dir(include_dir().join("hike"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".h"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = HEADERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, embedded, "add new SDK headers to HEADERS");
        for (name, text) in HEADERS {
            assert_eq!(std::fs::read_to_string(include_dir().join("hike").join(name)).unwrap(), text);
        }
    }
}
