//! Registries opened by their URL. (The rules of registry URLs, the same whatever
//! reads one, are tested with `ebpkg_spec::RegistryId`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebpkg_sources::{ErrorKind, OpenOptions, RegistryId, open_registry};

#[test]
fn http_registries_open_without_the_network_and_name_the_url_when_it_fails() {
    // Port 9 on loopback: nothing listens, the connection is refused at once.
    let url = RegistryId::parse("http://127.0.0.1:9/").unwrap();
    let reg = open_registry(&url, &OpenOptions::default()).unwrap();
    assert_eq!(reg.url(), &url);
    let e = reg.index(&ebpkg_spec::PackageName::new("net").unwrap()).err().unwrap();
    assert!(matches!(e.kind(), ErrorKind::Network { .. }), "{e}");
    assert!(e.to_string().contains("GET http://127.0.0.1:9/index/config.json"), "{e}");
}
