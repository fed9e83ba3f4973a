//! TUF over a directory registry, through the real CLI: `ebpkg registry
//! tuf-init` signs it, `ebpkg registry add --root` trusts it, publishes re-sign
//! it, and every way of serving stale or foreign index files is refused with
//! exit code 10 and ebpkg.lock left as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::{Run, Sandbox};

struct Tuf {
    sb: Sandbox,
    app: PathBuf,
    online_key: PathBuf,
    root_key: PathBuf,
}

impl Tuf {
    /// A registry with `c@1.0.0`, signed with TUF and trusted; a project `app`
    /// depending on `c ^1`, locked.
    fn new(tag: &str) -> Tuf {
        let sb = Sandbox::new(tag);
        sb.publish_manifest("c", "1.0.0", &[]);
        let (init, root_key, online_key) = sb.tuf_init();
        assert!(init.stderr.contains("Signed 2 file(s)"), "{}", init.stderr);
        let app = sb.app(&[("c", "1")]);
        sb.run(&app, &["lock"]).ok();
        Tuf { sb, app, online_key, root_key }
    }

    fn registry(&self, rel: &str) -> PathBuf {
        self.sb.path("registry").join(rel)
    }

    fn publish_signed(&self, version: &str) {
        let dir = self.sb.path(&format!("gen/c-{version}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ebpkg.toml"), format!("[package]\nname = \"c\"\nversion = \"{version}\"\n")).unwrap();
        let key = self.online_key.to_str().unwrap();
        self.sb.run_with(&dir, &["publish", "--no-verify"], &[("EBPKG_TUF_ONLINE_KEY", key)], None).ok();
    }

    fn lock(&self) -> String {
        std::fs::read_to_string(self.app.join("ebpkg.lock")).unwrap()
    }

    /// `ebpkg update` refused with exit 10 and a message holding `needle`, the
    /// lockfile untouched.
    fn refused(&self, needle: &str) -> Run {
        let before = self.lock();
        let run = self.sb.run(&self.app, &["update"]).fails(10);
        assert!(run.stderr.contains(needle), "`{needle}` not in: {}", run.stderr);
        assert_eq!(self.lock(), before, "ebpkg.lock unchanged");
        run
    }
}

/// The files of the registry's `tuf/` directory and `c`'s index file.
fn snapshot_files(t: &Tuf) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(t.registry("tuf")).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>();
    files.push(t.registry("index/1/c"));
    files.into_iter().map(|p| (p.clone(), std::fs::read(&p).unwrap())).collect()
}

fn restore(files: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        std::fs::write(path, bytes).unwrap();
    }
}

#[test]
fn publishes_re_sign_and_installs_check_every_index_file() {
    let t = Tuf::new("tufpub");
    assert!(t.lock().contains("name = \"c\"\nversion = \"1.0.0\""), "{}", t.lock());
    // Without the online key a publish would leave the metadata stale: refused first.
    let dir = t.sb.path("gen/c-1.0.1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), "[package]\nname = \"c\"\nversion = \"1.0.1\"\n").unwrap();
    let before = std::fs::read(t.registry("index/1/c")).unwrap();
    let refused = t.sb.run(&dir, &["publish", "--no-verify"]).fails(2);
    assert!(refused.stderr.contains("EBPKG_TUF_ONLINE_KEY"), "{}", refused.stderr);
    assert_eq!(std::fs::read(t.registry("index/1/c")).unwrap(), before, "nothing was written");

    t.publish_signed("1.1.0");
    t.sb.run(&t.app, &["update"]).ok();
    assert!(t.lock().contains("version = \"1.1.0\""), "{}", t.lock());

    // A yank re-signs too.
    let key = t.online_key.to_str().unwrap();
    t.sb.run_with(&t.app, &["yank", "c@1.0.0"], &[("EBPKG_TUF_ONLINE_KEY", key)], None).ok();
    let info = t.sb.run(&t.app, &["info", "c"]).ok();
    assert!(info.stdout.contains("1.0.0 (yanked)"), "{}", info.stdout);
}

#[test]
fn rollback_mix_and_match_and_unlisted_packages_are_refused() {
    let t = Tuf::new("tufhostile");
    let old = snapshot_files(&t);
    t.publish_signed("1.1.0");
    t.sb.run(&t.app, &["update"]).ok();
    let new = snapshot_files(&t);

    // The whole older, validly signed state: a rollback.
    restore(&old);
    t.refused("rollback");
    restore(&new);
    t.sb.run(&t.app, &["update"]).ok();

    // Only the older index file, under current metadata: mix-and-match.
    std::fs::write(t.registry("index/1/c"), &old.iter().find(|(p, _)| p.ends_with("index/1/c")).unwrap().1).unwrap();
    t.refused("mix-and-match");
    restore(&new);

    // A line added by whoever can write the directory, not by a publish.
    let mut text = std::fs::read_to_string(t.registry("index/1/c")).unwrap();
    text.push_str(&text.lines().last().unwrap().replace("1.1.0", "1.9.0"));
    text.push('\n');
    std::fs::write(t.registry("index/1/c"), text).unwrap();
    t.refused("does not match the registry's signed metadata");
    restore(&new);

    // A package no publish ever signed.
    std::fs::create_dir_all(t.registry("index/1")).unwrap();
    std::fs::write(
        t.registry("index/1/d"),
        std::fs::read_to_string(t.registry("index/1/c")).unwrap().replace("\"c\"", "\"d\""),
    )
    .unwrap();
    std::fs::write(
        t.app.join("ebpkg.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\nc = \"1\"\nd = \"1\"\n",
    )
    .unwrap();
    t.refused("not in the registry's signed metadata");
}

#[test]
fn frozen_or_endless_metadata_is_refused_and_the_root_can_rotate() {
    let t = Tuf::new("tufroot");
    let tuf = t.registry("tuf");
    let expiry = ebpkg_tuf::Expiry::default();

    // A timestamp signed three days ago: expired, as if the registry were frozen.
    let three_days_ago = jiff::Timestamp::now().checked_sub(jiff::SignedDuration::from_hours(72)).unwrap();
    ebpkg_tuf::repo::refresh(&mut ebpkg_tuf::DirStore::new(&tuf), &t.online_key, three_days_ago, &expiry).unwrap();
    t.refused("freeze");
    ebpkg_tuf::repo::refresh(&mut ebpkg_tuf::DirStore::new(&tuf), &t.online_key, jiff::Timestamp::now(), &expiry)
        .unwrap();
    t.sb.run(&t.app, &["update"]).ok();

    // Endless data.
    let timestamp = std::fs::read(tuf.join("timestamp.json")).unwrap();
    let mut huge = timestamp.clone();
    huge.extend(std::iter::repeat_n(b' ', 64 * 1024));
    std::fs::write(tuf.join("timestamp.json"), huge).unwrap();
    t.refused("larger than allowed");
    std::fs::write(tuf.join("timestamp.json"), timestamp).unwrap();

    // The operator rotates both keys: clients follow from the root they trust.
    let (new_root, new_online) = (t.sb.path("tuf-root2.key"), t.sb.path("tuf-online2.key"));
    let dir = t.sb.dir.path().to_owned();
    t.sb.run(
        &dir,
        &[
            "registry",
            "tuf-rotate",
            t.sb.path("registry").to_str().unwrap(),
            "--root-key",
            t.root_key.to_str().unwrap(),
            "--online-key",
            t.online_key.to_str().unwrap(),
            "--new-root-key",
            new_root.to_str().unwrap(),
            "--new-online-key",
            new_online.to_str().unwrap(),
        ],
    )
    .ok();
    t.sb.run(&t.app, &["update"]).ok();
    let trusted = trusted_root(&t.sb);
    let text = std::fs::read_to_string(&trusted).unwrap();
    assert!(text.contains("\"version\": 3"), "the client now trusts root v3 (two rotations): {text}");
    // Publishing now signs with the new online key; metadata signed with the old
    // one is refused by clients.
    let old_online = t.online_key.clone();
    let rotated = Tuf { online_key: new_online, ..t };
    rotated.publish_signed("1.2.0");
    rotated.sb.run(&rotated.app, &["update"]).ok();
    assert!(rotated.lock().contains("version = \"1.2.0\""), "{}", rotated.lock());
    // The retired online key cannot sign a change: refused before anything is written.
    let dir = rotated.sb.path("gen/c-1.3.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), "[package]\nname = \"c\"\nversion = \"1.3.0\"\n").unwrap();
    let before = std::fs::read(rotated.registry("index/1/c")).unwrap();
    let env = [("EBPKG_TUF_ONLINE_KEY", old_online.to_str().unwrap())];
    let refused = rotated.sb.run_with(&dir, &["publish", "--no-verify"], &env, None).fails(10);
    assert!(refused.stderr.contains("is not the registry's online key"), "{}", refused.stderr);
    assert_eq!(std::fs::read(rotated.registry("index/1/c")).unwrap(), before);
}

/// The one trusted root under the sandbox's config directory.
fn trusted_root(sb: &Sandbox) -> PathBuf {
    let dir = sb.path("tuf");
    let entry = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
    let root = entry.path().join("root.json");
    assert!(Path::new(&root).is_file(), "{}", root.display());
    root
}

#[test]
fn a_mirror_carries_the_metadata_and_is_checked_against_the_origin_root() {
    let t = Tuf::new("tufmirror");
    t.publish_signed("1.1.0");
    t.sb.run(&t.app, &["update"]).ok();
    let mirror = t.sb.path("mirror");
    t.sb.run(&t.app, &["mirror", mirror.to_str().unwrap()]).ok();
    assert!(mirror.join("tuf/timestamp.json").is_file(), "the origin's metadata travels with the mirror");
    assert_eq!(
        std::fs::read(mirror.join("index/1/c")).unwrap(),
        std::fs::read(t.registry("index/1/c")).unwrap(),
        "index files are the origin's, byte for byte"
    );
    let url = format!("file://{}/", mirror.display());
    let env = [("EBPKG_MIRROR", url.as_str())];
    // The origin is gone: the mirror alone serves, checked against the origin's root.
    std::fs::rename(t.sb.path("registry"), t.sb.path("registry-away")).unwrap();
    let ok = t.sb.run_with(&t.app, &["-v", "update"], &env, None).ok();
    assert!(!ok.stderr.contains("error"), "{}", ok.stderr);

    let mut text = std::fs::read_to_string(mirror.join("index/1/c")).unwrap();
    text.push_str(&text.lines().last().unwrap().replace("1.1.0", "1.9.0"));
    text.push('\n');
    std::fs::write(mirror.join("index/1/c"), text).unwrap();
    let tampered = t.sb.run_with(&t.app, &["update"], &env, None).fails(10);
    assert!(tampered.stderr.contains("does not match the registry's signed metadata"), "{}", tampered.stderr);

    // A mirror without the metadata is not trusted either.
    std::fs::remove_dir_all(mirror.join("tuf")).unwrap();
    let bare = t.sb.run_with(&t.app, &["update"], &env, None).fails(10);
    assert!(bare.stderr.contains("the registry's metadata could not be fetched"), "{}", bare.stderr);
    assert!(bare.stderr.contains("mirror/tuf/timestamp.json"), "{}", bare.stderr);
}

/// A real install from a TUF-signed registry; then the project needs a new
/// resolution while the registry serves rolled-back, mixed, forged, endless or
/// expired metadata: each install is refused before anything is fetched, built
/// or loaded, and the deployment keeps running; once the registry is whole again
/// the install goes through.
#[test]
fn stale_or_foreign_metadata_refuses_the_install_and_the_deployment_keeps_running() {
    common::require_kernel();
    let sb = Sandbox::with_netns("tufkern");
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    let (_, _, online_key) = sb.tuf_init();
    let registry = sb.path("registry");
    let app = sb.package("app");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let pins = sb.pins();

    // flow 1.1.0 is published (and re-signed); the registry is then rolled back.
    let old: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(registry.join("tuf"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .chain([registry.join("index/fl/ow/flow")])
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect();
    let flow = sb.package("flow");
    let toml = std::fs::read_to_string(flow.join("ebpkg.toml")).unwrap().replace("1.0.0", "1.1.0");
    std::fs::write(flow.join("ebpkg.toml"), toml).unwrap();
    let key = online_key.to_str().unwrap();
    sb.run_with(&flow, &["publish", "--no-verify"], &[("EBPKG_TUF_ONLINE_KEY", key)], None).ok();
    // This machine sees the new metadata (and remembers its versions).
    let info = sb.run(&app, &["info", "flow"]).ok();
    assert!(info.stdout.contains("1.1.0"), "{}", info.stdout);
    let new_state: Vec<(PathBuf, Vec<u8>)> = old.iter().map(|(p, _)| (p.clone(), std::fs::read(p).unwrap())).collect();
    restore(&old);
    // The project now wants flow 1.1: a new resolution, against rolled-back metadata.
    let manifest =
        std::fs::read_to_string(app.join("ebpkg.toml")).unwrap().replace("flow = \"^1.0\"", "flow = \"^1.1\"");
    std::fs::write(app.join("ebpkg.toml"), manifest).unwrap();
    let refused = |says: &str| {
        let run = sb.run(&app, &["install"]).fails(10);
        assert!(run.stderr.contains(says), "`{says}` not in: {}", run.stderr);
        assert_eq!(sb.pins(), pins, "a refused install changed the pins");
        assert_eq!(sb.status()[0]["generation"], 1, "a refused install made a new generation");
    };
    refused("rollback");

    // The same install against each other way of serving stale or foreign metadata.
    restore(&new_state);
    let index = registry.join("index/fl/ow/flow");
    let current = std::fs::read(&index).unwrap();
    std::fs::write(&index, &old.iter().find(|(p, _)| *p == index).unwrap().1).unwrap();
    refused("mix-and-match");
    let forged = String::from_utf8(current.clone()).unwrap();
    let extra = forged.lines().last().unwrap().replace("1.1.0", "1.9.0");
    std::fs::write(&index, format!("{forged}{extra}\n")).unwrap();
    refused("does not match the registry's signed metadata");
    std::fs::write(&index, &current).unwrap();
    let timestamp = registry.join("tuf/timestamp.json");
    let good = std::fs::read(&timestamp).unwrap();
    let mut huge = good.clone();
    huge.extend(std::iter::repeat_n(b' ', 64 * 1024));
    std::fs::write(&timestamp, huge).unwrap();
    refused("larger than allowed");
    std::fs::write(&timestamp, &good).unwrap();
    let three_days_ago = jiff::Timestamp::now().checked_sub(jiff::SignedDuration::from_hours(72)).unwrap();
    let expiry = ebpkg_tuf::Expiry::default();
    ebpkg_tuf::repo::refresh(&mut ebpkg_tuf::DirStore::new(registry.join("tuf")), &online_key, three_days_ago, &expiry)
        .unwrap();
    refused("freeze");

    // Once the registry is whole again, the same install goes through.
    ebpkg_tuf::repo::refresh(
        &mut ebpkg_tuf::DirStore::new(registry.join("tuf")),
        &online_key,
        jiff::Timestamp::now(),
        &expiry,
    )
    .unwrap();
    sb.run(&app, &["install"]).ok();
    assert_eq!(sb.status()[0]["generation"], 2);
}

/// All of a registry server's TUF rows.
fn tuf_rows(server: &ebpkg_registry::testing::TestRegistry) -> Vec<(String, Vec<u8>)> {
    server.block_on(ebpkg_registry::db::tuf::all(server.pool())).unwrap()
}

/// A registry server with TUF metadata holding `c@1.0.0`, used by a sandbox that
/// trusts its root (obtained out of band) as registry `corp`.
fn tuf_server(tag: &str) -> (ebpkg_registry::testing::TestRegistry, Sandbox, tempfile::TempDir) {
    let keys = tempfile::tempdir().unwrap();
    let (root_key, online_key) = (keys.path().join("root.key"), keys.path().join("online.key"));
    let online = online_key.clone();
    let server =
        ebpkg_registry::testing::TestRegistry::start_with(Box::new(move |c| c.tuf_online_key = Some(online))).unwrap();
    let mut sb = Sandbox::new(tag);
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("c", "1.0.0", &[]);
    server.block_on(ebpkg_registry::tuf::init(server.pool(), std::slice::from_ref(&root_key), 1, &online_key)).unwrap();
    let root = tuf_rows(&server).into_iter().find(|(n, _)| n == "root.json").unwrap().1;
    std::fs::write(sb.path("root.json"), root).unwrap();
    let dir = sb.dir.path().to_owned();
    let added =
        sb.run(&dir, &["registry", "add", "corp", server.url(), "--root", sb.path("root.json").to_str().unwrap()]).ok();
    assert!(added.stderr.contains("Trusted the TUF root (v1)"), "{}", added.stderr);
    (server, sb, keys)
}

#[test]
fn a_registry_server_with_tuf_is_checked_like_a_directory() {
    let (server, sb, _keys) = tuf_server("tufhttp");

    let app = sb.app(&[("c", "1")]);
    sb.run(&app, &["lock"]).ok();
    let old = tuf_rows(&server);
    sb.publish_manifest("c", "1.1.0", &[]);
    sb.run(&app, &["update"]).ok();
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.1.0\""));

    // The server's database is restored from an old backup of its metadata.
    let pool = server.pool().clone();
    server
        .block_on(async move {
            let mut tx = pool.begin().await?;
            for (name, bytes) in &old {
                ebpkg_registry::db::tuf::write(&mut tx, name, bytes).await?;
            }
            tx.commit().await
        })
        .unwrap();
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    let refused = sb.run(&app, &["update"]).fails(10);
    assert!(refused.stderr.contains("rollback"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), lock);

    // Offline, nothing can be checked: cached index files are used, and it says so.
    let offline = sb.run(&app, &["--offline", "update"]).ok();
    assert!(offline.stderr.contains("not checked"), "{}", offline.stderr);
}

/// With TUF, the signed metadata decides whether cached index files are current:
/// a warm resolution asks only whether the timestamp changed; one publish later,
/// it fetches what changed (the timestamp, TUF's look for a next root, the
/// snapshot, one bin, the index file) and nothing else; and a cached copy that is
/// not the signed file is fetched again, never used.
#[test]
fn a_warm_resolution_asks_only_for_the_timestamp_and_fetches_only_what_changed() {
    let (server, sb, _keys) = tuf_server("tufwarm");
    sb.publish_manifest("d", "1.0.0", &[]);
    let app = sb.app(&[("c", "1"), ("d", "1")]);
    sb.run(&app, &["lock"]).ok();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    let warm = sb.run(&app, &["-vv", "lock"]).ok();
    assert_eq!(warm.requests(), ["GET /tuf/timestamp.json → 304"], "{}", warm.stderr);
    // Offline, the records are found under the hashes the last verified view lists,
    // as online: none is parsed again, the resolution cache is not rewritten.
    let records = walk(&sb.cache.join("index")).into_iter().find(|p| p.extension().is_some_and(|x| x == "resolution"));
    let records = records.expect("a resolution cache");
    let before = std::fs::read(&records).unwrap();
    // (Settled, as cached copies must be to be fingerprinted as files.)
    std::thread::sleep(std::time::Duration::from_millis(2100));
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    sb.run(&app, &["--offline", "lock"]).ok();
    assert_eq!(std::fs::read(&records).unwrap(), before, "offline used the records online resolutions made");

    sb.publish_manifest("c", "1.1.0", &[]);
    let changed = sb.run(&app, &["-vv", "update"]).ok();
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.1.0\""));
    let asked = changed.requests();
    let bins: Vec<&String> = asked.iter().filter(|r| r.contains("/tuf/bins-")).collect();
    assert_eq!(bins.len(), 1, "one bin: {asked:?}");
    for want in ["GET /tuf/timestamp.json → 200", "GET /tuf/2.root.json → 404", "GET /tuf/snapshot.json → 200"] {
        assert!(asked.iter().any(|r| r == want), "{want}: {asked:?}");
    }
    assert!(!asked.iter().any(|r| r.contains("targets.json") || r.contains("/d ")), "{asked:?}");
    assert!(asked.iter().any(|r| r.starts_with("GET /index/1/c ")), "{asked:?}");

    // A cached copy that is not the signed file (damaged on disk): fetched again.
    let cached = walk(&sb.cache.join("index")).into_iter().find(|p| p.ends_with("1/d")).unwrap();
    let mut bytes = std::fs::read(&cached).unwrap();
    bytes.extend_from_slice(b"{\"damaged\":true}\n");
    std::fs::write(&cached, bytes).unwrap();
    let again = sb.run(&app, &["-vv", "update"]).ok();
    assert!(again.requests().iter().any(|r| r == "GET /index/1/d → 200"), "{:?}", again.requests());
    assert!(!again.stderr.contains("damaged"), "{}", again.stderr);
    drop(server);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A proxy (a CDN, say) in front of a registry server, on loopback: forwards each
/// request and, while `forge` is set, passes the bodies of the 200 answers to the
/// requests starting with `forged_request` (`GET /index/1/c `) through
/// `forgery`, keeping their headers (the ETag too).
struct ForgingProxy {
    url: String,
    forge: std::sync::Arc<std::sync::atomic::AtomicBool>,
    _peer: ebpkg_registry_testing::HttpPeer,
}

impl ForgingProxy {
    fn start(upstream: &str, forged_request: &'static str, forgery: fn(&[u8]) -> Vec<u8>) -> ForgingProxy {
        use std::io::{Read, Write};
        let upstream = upstream.trim_start_matches("http://").trim_end_matches('/').to_owned();
        let forge = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let forging = forge.clone();
        let peer = ebpkg_registry_testing::HttpPeer::start(move |request, client| {
            // Plain answers, so that a line can be added to them.
            let head: String = request
                .head
                .split_inclusive("\r\n")
                .filter(|line| {
                    let lower = line.to_ascii_lowercase();
                    !lower.starts_with("connection:") && !lower.starts_with("accept-encoding:")
                })
                .collect();
            let forged = request.line().starts_with(forged_request);
            let mut server = std::net::TcpStream::connect(&upstream).unwrap();
            server.write_all((head + "Connection: close\r\n\r\n").as_bytes()).unwrap();
            server.write_all(&request.body).unwrap();
            let mut answer = Vec::new();
            let _ = server.read_to_end(&mut answer);
            let split = answer.windows(4).position(|w| w == b"\r\n\r\n").map_or(answer.len(), |p| p + 4);
            if forged && forging.load(std::sync::atomic::Ordering::SeqCst) && answer.starts_with(b"HTTP/1.1 200") {
                let forged_body = forgery(&answer[split..]);
                let headers = String::from_utf8_lossy(&answer[..split]).to_string();
                let headers: String = headers
                    .split_inclusive("\r\n")
                    .map(|h| {
                        if h.to_ascii_lowercase().starts_with("content-length:") {
                            format!("content-length: {}\r\n", forged_body.len())
                        } else {
                            h.to_owned()
                        }
                    })
                    .collect();
                answer = [headers.into_bytes(), forged_body].concat();
            }
            let _ = client.write_all(&answer);
        })
        .unwrap();
        ForgingProxy { url: peer.url(), forge, _peer: peer }
    }

    fn forging(&self, on: bool) {
        self.forge.store(on, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn one_forged_index_answer_does_not_stay_in_the_cache() {
    let (server, sb, _keys) = tuf_server("tufpoison");

    // Everything is read through the proxy (a mirror of the server, checked
    // against the server's TUF root).
    let proxy = ForgingProxy::start(server.url(), "GET /index/1/c ", |body| {
        let line = b"{\"v\":1,\"name\":\"c\",\"vers\":\"9.9.9\",\"deps\":[],\"cksum\":\"00\",\"yanked\":false}\n";
        [body, line.as_slice()].concat()
    });
    let through = |args: &[&str]| sb.run_with(&sb.path("app"), args, &[("EBPKG_MIRROR", proxy.url.as_str())], None);
    let app = sb.app(&[("c", "1")]);
    through(&["lock"]).ok();

    // A new version, and one forged answer for its index file: refused.
    sb.publish_manifest("c", "1.1.0", &[]);
    proxy.forging(true);
    let refused = through(&["update"]).fails(10);
    assert!(refused.stderr.contains("index/1/c"), "{}", refused.stderr);
    // The proxy is honest again: the next command gets the real file (it used to
    // revalidate the forged copy by its ETag, get a 304, and refuse it forever).
    proxy.forging(false);
    through(&["update"]).ok();
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.1.0\""));
}

#[test]
fn the_registry_servers_configuration_is_signed_and_a_forged_one_refused() {
    let (server, sb, _keys) = tuf_server("tufconfig");
    // The configuration says where archives come from: a proxy sending them
    // elsewhere is caught by the signed metadata, as for an index file.
    let proxy = ForgingProxy::start(server.url(), "GET /index/config.json ", |body| {
        String::from_utf8_lossy(body).replace("/api/v1/packages", "/elsewhere").into_bytes()
    });
    let through = |args: &[&str]| sb.run_with(&sb.path("app"), args, &[("EBPKG_MIRROR", proxy.url.as_str())], None);
    sb.app(&[("c", "1")]);
    through(&["lock"]).ok();
    proxy.forging(true);
    // The copy kept by the last command is the signed one: used, nothing asked.
    through(&["fetch"]).ok();
    // Without it, the forged answer is fetched, and refused.
    for kept in walk(&sb.cache.join("index")).into_iter().filter(|p| p.ends_with("config.json")) {
        std::fs::remove_file(kept).unwrap();
    }
    std::fs::remove_dir_all(sb.cache.join("archives")).ok();
    let refused = through(&["fetch"]).fails(10);
    assert!(refused.stderr.contains("index/config.json"), "{}", refused.stderr);
    proxy.forging(false);
    through(&["fetch"]).ok();
    // python-tuf, too, finds it among the targets.
    let got = python_tuf_run("accept", server.url(), &sb.path("root.json"), &["index/config.json"]);
    assert!(got["targets"]["index/config.json"].as_str().is_some_and(|h| h.len() == 64), "{got}");
}

#[test]
fn a_clock_that_was_once_ahead_is_reported_and_repaired_not_a_wedge() {
    let t = Tuf::new("tufclock");
    // What one command run with the clock two days ahead leaves: tough records the
    // latest time it saw, and refuses every later load with the clock behind it.
    let stores: Vec<PathBuf> = std::fs::read_dir(t.sb.cache.join("tuf")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(stores.len(), 1, "{stores:?}");
    let file = stores[0].join("latest_known_time.json");
    assert!(file.is_file(), "{}", file.display());
    let ahead = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(48);
    std::fs::write(&file, format!("\"{ahead}\"")).unwrap();

    // The error names the file and the way out.
    let run = t.refused("is behind the time an earlier command saw");
    assert!(run.stderr.contains(file.to_str().unwrap()) && run.stderr.contains("ebpkg doctor --fix"), "{}", run.stderr);
    // doctor says so; doctor --fix forgets the time; the next command works.
    let dir = t.sb.dir.path().to_owned();
    let doctor = t.sb.run(&dir, &["doctor"]);
    assert!(
        doctor.stdout.contains("TUF clock") && doctor.stdout.contains("ahead of this machine's clock"),
        "{}",
        doctor.stdout
    );
    let fixed = t.sb.run(&dir, &["doctor", "--fix"]);
    assert!(fixed.stdout.contains("forgot:"), "{}", fixed.stdout);
    t.sb.run(&t.app, &["update"]).ok();
    let again = t.sb.run(&dir, &["doctor"]);
    assert!(!again.stdout.contains("TUF clock"), "{}", again.stdout);

    // A fleet's node, whose clock a time service keeps (its unit says
    // EBPKG_TUF_TRUST_CLOCK=1): the clock is believed and the node recovers alone.
    std::fs::write(&file, format!("\"{ahead}\"")).unwrap();
    t.refused("is behind the time an earlier command saw");
    let run = t.sb.run_with(&t.app, &["update"], &[("EBPKG_TUF_TRUST_CLOCK", "1")], None).ok();
    assert!(run.stderr.contains("EBPKG_TUF_TRUST_CLOCK") && run.stderr.contains("forgotten"), "{}", run.stderr);
    t.sb.run(&t.app, &["update"]).ok();
}

#[test]
fn tuf_init_makes_an_empty_directory_a_signed_registry_and_writes_nothing_for_a_foreign_one() {
    let sb = Sandbox::new("tufempty");
    let dir = sb.dir.path().to_owned();
    let reg = sb.path("empty-registry");
    std::fs::create_dir_all(&reg).unwrap();
    let keys = sb.path("keys/new");
    let (root_key, online_key) = (keys.join("root.key"), keys.join("online.key"));
    let args = |target: &std::path::Path, root: &std::path::Path, online: &std::path::Path| {
        let (t, r, o) = (
            target.to_str().unwrap().to_owned(),
            root.to_str().unwrap().to_owned(),
            online.to_str().unwrap().to_owned(),
        );
        vec!["registry".to_owned(), "tuf-init".to_owned(), "--root-key".to_owned(), r, "--online-key".to_owned(), o, t]
    };
    let run = |a: Vec<String>| sb.run(&dir, &a.iter().map(String::as_str).collect::<Vec<_>>());
    let done = run(args(&reg, &root_key, &online_key)).ok();
    assert!(done.stderr.contains("Signed 1 file(s)"), "{}", done.stderr);
    assert!(reg.join("config.json").is_file() && reg.join("tuf/root.json").is_file());
    assert!(root_key.is_file() && online_key.is_file());

    // A directory that is not a registry: refused before any key is made.
    let foreign = sb.path("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let other = sb.path("keys/other");
    let refused = run(args(&foreign, &other.join("root.key"), &other.join("online.key")));
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("is not an ebpkg registry"), "{}", refused.stderr);
    assert!(!other.exists(), "keys were written for a directory that cannot be signed");
}

/// python-tuf (TUF's reference implementation), in the venv ci/setup makes
/// (`EBPKG_TEST_PYTHON_TUF` names another python with it).
fn python_tuf() -> PathBuf {
    let python = std::env::var_os("EBPKG_TEST_PYTHON_TUF")
        .map_or_else(|| PathBuf::from("/opt/ebpkg-ci/python-tuf/bin/python"), PathBuf::from);
    assert!(python.is_file(), "python-tuf is not installed at {} (ci/setup installs it)", python.display());
    python
}

/// cli/tests/conformance/python_tuf.py: `accept` or `refuse` the registry's
/// metadata and `targets`; the script's JSON answer, after checking the outcome.
fn python_tuf_run(mode: &str, registry: &str, root: &Path, targets: &[&str]) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/python_tuf.py");
    let out = std::process::Command::new(python_tuf())
        .arg(&script)
        .args([mode, registry, root.to_str().unwrap()])
        .args(targets)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "python-tuf did not {mode}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn python_tuf_reads_what_ebpkg_signs_and_refuses_what_ebpkg_refuses() {
    use sha2::Digest as _;
    let t = Tuf::new("pytuf");
    let root = t.registry("tuf/root.json");
    let registry = t.registry("");
    let registry = registry.to_str().unwrap();
    // A directory registry: the index file and config.json, byte for byte.
    let got = python_tuf_run("accept", registry, &root, &["index/1/c", "config.json"]);
    for name in ["index/1/c", "config.json"] {
        let bytes = std::fs::read(t.registry(name)).unwrap();
        assert_eq!(got["targets"][name], hex::encode(sha2::Sha256::digest(&bytes)), "{name}: {got}");
    }
    // A publish re-signs; python-tuf follows.
    t.publish_signed("1.1.0");
    python_tuf_run("accept", registry, &root, &["index/1/c"]);

    // A line slipped into the index file: both refuse it.
    let saved = snapshot_files(&t);
    let index = t.registry("index/1/c");
    let mut text = std::fs::read(&index).unwrap();
    text.extend_from_slice(
        b"{\"v\":1,\"name\":\"c\",\"vers\":\"9.0.0\",\"deps\":[],\"cksum\":\"00\",\"yanked\":false}\n",
    );
    std::fs::write(&index, &text).unwrap();
    let refused = python_tuf_run("refuse", registry, &root, &["index/1/c"]);
    assert!(refused["refused"].as_str().unwrap().contains("Length"), "{refused}");
    t.refused("does not match the registry's signed metadata");
    restore(&saved);

    // A timestamp changed without its signature: both refuse it.
    let ts = t.registry("tuf/timestamp.json");
    let text = std::fs::read_to_string(&ts).unwrap();
    let forged = text.replacen("\"version\": ", "\"version\": 1", 1);
    assert_ne!(forged, text);
    std::fs::write(&ts, forged).unwrap();
    let refused = python_tuf_run("refuse", registry, &root, &["index/1/c"]);
    assert!(refused["refused"].as_str().unwrap().contains("timestamp"), "{refused}");
    t.refused("timestamp");
    restore(&saved);

    // The timestamp's signature under its key id in upper case (the signature
    // itself still valid): python-tuf finds no such key; ebpkg used to decode
    // the hex and accept it.
    let mut timestamp: serde_json::Value = serde_json::from_slice(&std::fs::read(&ts).unwrap()).unwrap();
    let id = timestamp["signatures"][0]["keyid"].as_str().unwrap().to_ascii_uppercase();
    timestamp["signatures"][0]["keyid"] = id.into();
    std::fs::write(&ts, serde_json::to_vec(&timestamp).unwrap()).unwrap();
    let refused = python_tuf_run("refuse", registry, &root, &["index/1/c"]);
    assert!(refused["refused"].as_str().unwrap().contains("timestamp"), "{refused}");
    t.refused("lower-case");
    restore(&saved);
}

#[test]
fn python_tuf_reads_a_registry_server() {
    let (server, sb, _keys) = tuf_server("pytufhttp");
    let got = python_tuf_run("accept", server.url(), &sb.path("root.json"), &["index/1/c"]);
    assert!(got["targets"]["index/1/c"].as_str().is_some_and(|h| h.len() == 64), "{got}");
}
