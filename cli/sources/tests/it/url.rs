//! Registry URLs: every spelling of one registry gives one canonical string, because
//! that string is what lockfiles record.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebpkg_sources::{ErrorKind, OpenOptions, RegistryKind, RegistryUrl, open_registry};

#[test]
fn file_urls_and_paths_are_canonical() {
    let canonical = "file:///srv/ebpkg-registry/";
    for spelling in [
        "file:///srv/ebpkg-registry",
        "file:///srv/ebpkg-registry/",
        "file://localhost/srv/ebpkg-registry",
        "file:///srv/./x/../ebpkg-registry",
        "/srv/ebpkg-registry",
        "/srv/ebpkg-registry/",
        "/srv//ebpkg-registry/.",
    ] {
        let url = RegistryUrl::parse(spelling).unwrap();
        assert_eq!(url.to_string(), canonical, "{spelling}");
        assert_eq!(url.kind(), RegistryKind::File);
        assert!(url.is_local());
        assert_eq!(url.file_path().unwrap(), std::path::Path::new("/srv/ebpkg-registry"));
    }
}

#[test]
fn relative_paths_are_made_absolute() {
    let cwd = std::env::current_dir().unwrap();
    let url = RegistryUrl::parse("some/registry").unwrap();
    assert_eq!(url.file_path().unwrap(), cwd.join("some/registry"));
    assert!(url.as_str().starts_with("file:///") && url.as_str().ends_with("/some/registry/"), "{url}");
    assert_eq!(RegistryUrl::parse("./some/./registry").unwrap(), url);
}

#[test]
fn paths_with_odd_characters_are_percent_encoded() {
    let url = RegistryUrl::parse("/srv/my registry#1").unwrap();
    assert_eq!(url.as_str(), "file:///srv/my%20registry%231/");
    assert_eq!(url.file_path().unwrap(), std::path::Path::new("/srv/my registry#1"));
    assert_eq!(RegistryUrl::parse(url.as_str()).unwrap(), url);
}

#[test]
fn http_urls_are_canonical() {
    for (spelling, canonical) in [
        ("https://registry.ebpkg.dev", "https://registry.ebpkg.dev/"),
        ("https://Registry.EBPKG.dev/", "https://registry.ebpkg.dev/"),
        ("https://registry.ebpkg.dev:443/", "https://registry.ebpkg.dev/"),
        ("https://example.org/ebpkg", "https://example.org/ebpkg/"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
    ] {
        let url = RegistryUrl::parse(spelling).unwrap();
        assert_eq!(url.to_string(), canonical, "{spelling}");
        assert_eq!(url.kind(), RegistryKind::Http);
        assert!(!url.is_local());
        assert_eq!(url.file_path(), None);
        assert_eq!(url.as_str().parse::<RegistryUrl>().unwrap(), url, "canonical form parses to itself");
    }
}

#[test]
fn bad_urls_say_why() {
    let message = |input: &str| RegistryUrl::parse(input).unwrap_err().to_string();
    let e = RegistryUrl::parse("git://example.org/reg").unwrap_err();
    assert!(matches!(&e, ebpkg_sources::UrlError::UnsupportedScheme { scheme, .. } if scheme == "git"), "{e}");
    assert!(e.to_string().contains("`https://`, `http://` or `file://`"), "{e}");
    assert!(message("ftp://example.org").contains("scheme `ftp:`"));
    assert!(message("https://user:secret@example.org").contains("credentials"));
    assert!(message("https://example.org/?x=1").contains("query"));
    assert!(message("file://otherhost/srv").contains("remove the host name"));
    assert!(message("").contains("it is empty"));
    assert!(message("https://").contains("not a registry location"));
}

#[test]
fn http_registries_open_without_the_network_and_name_the_url_when_it_fails() {
    // Port 9 on loopback: nothing listens, the connection is refused at once.
    let url = RegistryUrl::parse("http://127.0.0.1:9/").unwrap();
    let reg = open_registry(&url, &OpenOptions::default()).unwrap();
    assert_eq!(reg.url(), &url);
    let e = reg.index(&ebpkg_spec::PackageName::new("net").unwrap()).err().unwrap();
    assert!(matches!(e.kind(), ErrorKind::Network { .. }), "{e}");
    assert!(e.to_string().contains("GET http://127.0.0.1:9/index/config.json"), "{e}");
}
