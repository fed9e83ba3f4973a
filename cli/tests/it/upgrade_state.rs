//! Upgrades keep the state of the programs' maps, against the real kernel: the
//! fixture project with a `flow` package that counts packets per CPU (an array)
//! and per destination port (a hash map), upgraded under ping traffic, then to
//! versions whose map layout changed: refused, extended when the package says
//! so, reset with `--reset-state`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// `flow` at `version`, with a hash map `flow_ports` whose value struct has
/// `fields` (u64 each), updated by flow_match for UDP packets; `on_upgrade` goes
/// into the map's manifest entry. `matches_sport` makes flow_match compare the
/// source port (a code change, the maps unchanged).
fn publish_flow(sb: &Sandbox, version: &str, fields: &[&str], on_upgrade: Option<&str>, matches_sport: bool) {
    let dir = sb.package("flow");
    let members: String = fields.iter().map(|f| format!("\t__u64 {f};\n")).collect();
    let mut src = std::fs::read_to_string(dir.join("src/flow.bpf.c")).unwrap();
    src = src.replace(
        "HIKE_PROGRAM(flow_match,",
        &format!(
            "struct flow_port_stats {{\n{members}}};\n\nstruct {{\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, 64);\n\
             \t__type(key, __u16);\n\t__type(value, struct flow_port_stats);\n}} flow_ports SEC(\".maps\");\n\n\
             HIKE_PROGRAM(flow_match,"
        ),
    );
    src = src.replace(
        "\treturn hike_result(bpf_ntohs(*dport) == port);",
        &format!(
            "\t{{\n\t\t__u16 p = bpf_ntohs(*dport);\n\t\tstruct flow_port_stats *s = bpf_map_lookup_elem(&flow_ports, &p);\n\n\
             \t\tif (s) {{\n\t\t\t__sync_fetch_and_add(&s->{first}, 1);\n\t\t}} else {{\n\
             \t\t\tstruct flow_port_stats n = {{ .{first} = 1 }};\n\n\
             \t\t\tbpf_map_update_elem(&flow_ports, &p, &n, BPF_NOEXIST);\n\t\t}}\n\t}}\n\
             \treturn hike_result(bpf_ntohs(*dport) == port);",
            first = fields[0]
        ),
    );
    if matches_sport {
        src = src.replace("dport = data + off + 2;", "dport = data + off;");
    }
    std::fs::write(dir.join("src/flow.bpf.c"), src).unwrap();
    let value: Vec<String> = fields.iter().map(|f| format!("{{ name = \"{f}\", type = \"u64\" }}")).collect();
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml"))
        .unwrap()
        .replace("version = \"1.0.0\"", &format!("version = \"{version}\""))
        + &format!(
            "\n[[program.map]]\nname = \"flow_ports\"\ndoc = \"packets per UDP destination port\"\n\
         key = [{{ name = \"port\", type = \"u16\" }}]\nvalue = [{}]\n{}",
            value.join(", "),
            on_upgrade.map(|o| format!("on-upgrade = \"{o}\"\n")).unwrap_or_default()
        );
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    sb.publish(&dir);
}

/// The entries of a map as `status --map NAME --json` decodes them (that map only):
/// key → value.
fn map(sb: &Sandbox, name: &str) -> Vec<(serde_json::Value, serde_json::Value)> {
    let run = sb.run(sb.dir.path(), &["status", "--map", name, "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let maps = st[0]["maps"].as_array().unwrap();
    assert_eq!(maps.len(), 1, "only the map asked for: {st}");
    let m = maps.iter().find(|m| m["map"] == name).unwrap_or_else(|| panic!("{st}"));
    m["entries"].as_array().unwrap().iter().map(|e| (e["key"].clone(), e["value"].clone())).collect()
}

fn count(sb: &Sandbox, slot: u64) -> u64 {
    map(sb, "flow_counters").iter().find(|(k, _)| k["slot"] == slot).map_or(0, |(_, v)| v["packets"].as_u64().unwrap())
}

fn ports(sb: &Sandbox) -> Vec<(u64, serde_json::Value)> {
    map(sb, "flow_ports").into_iter().map(|(k, v)| (k["port"].as_u64().unwrap(), v)).collect()
}

/// A second network namespace holding `vb`, so that packets from it reach `va`
/// through the veth pair (and XDP); removed when dropped.
struct Peer {
    ns: String,
}

impl Peer {
    fn new(sb: &Sandbox) -> Peer {
        let ns = format!("{}p", sb.netns.as_deref().unwrap());
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().unwrap();
            assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        };
        ip(&["netns", "add", &ns]);
        let peer = Peer { ns: ns.clone() };
        // IPv4 only: no neighbour discovery reaches the chain, every packet counted is a ping.
        let quiet =
            "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6";
        ip(&["netns", "exec", &ns, "sh", "-c", quiet]);
        let home = sb.netns.as_deref().unwrap();
        ip(&["-n", home, "link", "set", "vb", "netns", &ns]);
        ip(&["-n", home, "addr", "add", "10.77.0.1/24", "dev", "va"]);
        ip(&["-n", &ns, "addr", "add", "10.77.0.2/24", "dev", "vb"]);
        ip(&["-n", &ns, "link", "set", "vb", "up"]);
        peer
    }

    /// Pings va `n` times from the peer, 5 ms apart; returns (sent, answered).
    fn ping(&self, n: u32) -> std::process::Child {
        Command::new("ip")
            .args(["netns", "exec", &self.ns, "ping", "-q", "-i", "0.005", "-c", &n.to_string(), "10.77.0.1"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// `(transmitted, received)` from ping's summary.
fn ping_result(child: std::process::Child) -> (u64, u64) {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.contains("packets transmitted")).unwrap_or_else(|| panic!("{text}"));
    let num = |word: &str| -> u64 {
        let before = &line[..line.find(word).unwrap_or_else(|| panic!("{line}"))];
        before.trim_end().rsplit(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    (num(" packets transmitted"), num(" received"))
}

fn setup(tag: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::with_netns(tag);
    publish_flow(&sb, "1.0.0", &["packets"], None, false);
    for p in ["verdict", "classify"] {
        sb.publish(&sb.package(p));
    }
    let app = sb.package("app");
    (sb, app)
}

fn update_and_install(sb: &Sandbox, app: &Path, args: &[&str]) -> Run {
    sb.run(app, &["update", "flow"]).ok();
    sb.run(app, &[&["install"], args].concat())
}

#[test]
fn an_upgrade_under_traffic_keeps_every_count_and_a_changed_layout_needs_consent() {
    let (sb, app) = setup("keep");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    assert_eq!((count(&sb, 0), count(&sb, 1)), (2, 1));
    assert_eq!(ports(&sb), [(53, serde_json::json!({ "packets": 2 })), (9999, serde_json::json!({ "packets": 1 }))]);

    // 1.1.0 changes flow_match's code, not its maps: installed while va answers
    // pings, every ping counted once, by the old programs or the new, in one map.
    let peer = Peer::new(&sb);
    publish_flow(&sb, "1.1.0", &["packets"], None, true);
    sb.run(&app, &["update", "flow"]).ok();
    let pings = peer.ping(400);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let run = sb.run(&app, &["install"]).ok();
    let (sent, answered) = ping_result(pings);
    assert!(run.stderr.contains("Kept map flow_counters of flow 1.0.0 → 1.1.0"), "{}", run.stderr);
    assert!(run.stderr.contains("Kept map flow_ports of flow 1.0.0 → 1.1.0"), "{}", run.stderr);
    assert!(
        run.stderr.contains("Keeping loader instance app-1-classify-l3_classifier (its entries rewritten"),
        "{}",
        run.stderr
    );
    assert_eq!((sent, answered), (400, 400), "no ping lost across the upgrade");
    assert_eq!(count(&sb, 0), 2 + 400, "the per-CPU counter went on through the switch, no packet uncounted");
    assert_eq!(ports(&sb), [(53, serde_json::json!({ "packets": 2 })), (9999, serde_json::json!({ "packets": 1 }))]);
    let st = sb.status();
    assert_eq!(st[0]["state"][0]["fate"], "kept", "{st}");
    assert!(!sb.pins().iter().any(|p| p.contains("flow@1_0_0")), "1.0.0 is gone, its maps live on in 1.1.0");

    // 1.2.0 adds a field to flow_ports' value and does not say it may be extended.
    publish_flow(&sb, "1.2.0", &["packets", "bytes"], None, true);
    let run = update_and_install(&sb, &app, &[]).fails(1);
    assert!(
        run.stderr.contains(
            "flow@1.2.0: map `flow_ports` cannot keep what flow@1.1.0 holds in it: value size 8 → 16; value { packets: \
             u64 @0 } → { packets: u64 @0, bytes: u64 @8 }; its value only gains fields at the end, so the package can \
             declare `on-upgrade = \"extend\"`"
        ),
        "{}",
        run.stderr
    );
    let st = sb.status();
    assert_eq!((st[0]["generation"].as_u64(), st[0]["running"].as_bool()), (Some(2), Some(true)), "{st}");
    assert_eq!(ports(&sb).len(), 2, "the running deployment's state is untouched");

    // 1.2.1 declares the extension: entries copied, the new field zeroed.
    publish_flow(&sb, "1.2.1", &["packets", "bytes"], Some("extend"), true);
    let run = update_and_install(&sb, &app, &["--json"]).ok();
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let fates: Vec<(&str, &str)> = out["deployment"]["state"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["map"].as_str().unwrap(), s["fate"].as_str().unwrap()))
        .collect();
    assert_eq!(fates, [("flow_counters", "kept"), ("flow_ports", "extended")], "{out}");
    assert_eq!(
        ports(&sb),
        [
            (53, serde_json::json!({ "packets": 2, "bytes": 0 })),
            (9999, serde_json::json!({ "packets": 1, "bytes": 0 }))
        ]
    );
    assert_eq!(count(&sb, 0), 402);

    // 1.3.0 renames a field: refused, then started empty with --reset-state (the
    // counters, unchanged, are kept).
    publish_flow(&sb, "1.3.0", &["pkts", "bytes"], None, true);
    let run = update_and_install(&sb, &app, &[]).fails(1);
    assert!(run.stderr.contains("install with --reset-state to start it empty"), "{}", run.stderr);
    let run = sb.run(&app, &["install", "--reset-state"]).ok();
    assert!(
        run.stderr.contains("Reset map flow_ports of flow 1.2.1 → 1.3.0: starts empty (--reset-state); value {"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Kept map flow_counters of flow 1.2.1 → 1.3.0"), "{}", run.stderr);
    assert_eq!(ports(&sb), []);
    assert_eq!(count(&sb, 0), 402);
}

#[test]
fn an_upgrade_killed_while_it_shares_the_maps_leaves_the_running_version_whole() {
    let (sb, app) = setup("keepkill");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    publish_flow(&sb, "1.1.0", &["packets"], None, true);
    sb.run(&app, &["update", "flow"]).ok();
    let out = sb.cmd(&app, &["install"]).env("EBPKG_CRASH_AT", "register-shared-maps").output().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(9), "{out:?}");
    // The next command undoes the install: 1.0.0 runs, nothing of 1.1.0 is left.
    let st = sb.status();
    assert_eq!((st[0]["generation"].as_u64(), st[0]["running"].as_bool()), (Some(1), Some(true)), "{st}");
    assert!(!sb.pins().iter().any(|p| p.contains("flow@1_1_0")), "{:?}", sb.pins());
    assert_eq!((count(&sb, 0), ports(&sb).len()), (1, 1));
    // And the upgrade done again keeps the state.
    let run = sb.run(&app, &["install"]).ok();
    assert!(run.stderr.contains("Kept map flow_counters of flow 1.0.0 → 1.1.0"), "{}", run.stderr);
    assert_eq!(count(&sb, 0), 1);
}

/// `bpftool`'s tag of each program pinned under the package version's directory.
fn tags(sb: &Sandbox, package_dir: &str) -> Vec<(String, String)> {
    let dir = sb.root.join("progs").join(package_dir);
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        if e.path().is_dir() {
            continue;
        }
        let shown =
            Command::new("bpftool").args(["prog", "show", "pinned"]).arg(e.path()).arg("--json").output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        out.push((e.file_name().to_string_lossy().into_owned(), v["tag"].as_str().unwrap().to_owned()));
    }
    out.sort();
    out
}

fn attachments(sb: &Sandbox) -> Vec<(String, String)> {
    let st = sb.status();
    st[0]["loaders"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["attachments"].as_array().unwrap().clone())
        .map(|a| (a["interface"].as_str().unwrap().to_owned(), a["mode"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn a_rollback_reinstalls_a_saved_generation_exactly_without_registry_or_cache() {
    let (sb, app) = setup("rollback");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    let first_tags = tags(&sb, "flow@1_0_0");
    let first_attachments = attachments(&sb);
    assert_eq!(first_tags.len(), 2, "{first_tags:?}");

    publish_flow(&sb, "1.1.0", &["packets"], None, true);
    update_and_install(&sb, &app, &[]).ok();
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_PASS, "1.1.0 matches the source port");
    assert_eq!(count(&sb, 0), 2);

    let run = sb.run(&app, &["status", "--generations"]).ok();
    assert!(run.stdout.contains("generation 2  "), "{}", run.stdout);
    assert!(run.stdout.contains("(running)"), "{}", run.stdout);
    assert!(run.stdout.contains("  changed   flow 1.0.0 → 1.1.0"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("flow@1.1.0 (signed by {})", sb.key_id())), "{}", run.stdout);

    // The registry is not needed: the generation's objects were saved with it.
    std::fs::remove_dir_all(sb.path("registry")).unwrap();
    let run = sb.run(&app, &["rollback"]).ok();
    assert!(run.stderr.contains("Kept map flow_counters of flow 1.1.0 → 1.0.0"), "{}", run.stderr);
    assert!(
        run.stderr.contains("Keeping loader instance app-1-classify-l3_classifier (its entries rewritten"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("Finished deployment app generation 3 (replaced generation 2), generation 1 again"),
        "{}",
        run.stderr
    );
    assert_eq!(tags(&sb, "flow@1_0_0"), first_tags, "the very programs of generation 1");
    let st = sb.status();
    assert_eq!(st[0]["chains"][0]["tier"]["tier"], "native", "its chain native again, as in generation 1: {st}");
    assert_eq!(attachments(&sb), first_attachments);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP, "1.0.0 matches the destination port again");
    assert_eq!(count(&sb, 0), 2, "counters kept through the rollback");
    assert_eq!(count(&sb, 1), 1);

    let gens: serde_json::Value =
        serde_json::from_str(&sb.run(&app, &["status", "--generations", "--json"]).ok().stdout).unwrap();
    let listed: Vec<(u64, bool, Option<u64>)> = gens
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["generation"].as_u64().unwrap(), g["running"].as_bool().unwrap(), g["restores"].as_u64()))
        .collect();
    assert_eq!(listed, [(1, false, None), (2, false, None), (3, true, Some(1))]);
    let run = sb.run(&app, &["rollback", "--to", "7"]).fails(1);
    assert!(
        run.stderr.contains("deployment `app` has no generation 7 to roll back to; kept: 1, 2, 3 (the newest 5"),
        "{}",
        run.stderr
    );

    // A rollback killed at any step is repaired by the next command.
    for point in ["registered", "configuring", "saved", "committed"] {
        let out = sb.cmd(&app, &["rollback", "--to", "2"]).env("EBPKG_CRASH_AT", point).output().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(9), "{point}: {out:?}");
        let st = sb.status();
        assert_eq!(st[0]["running"], true, "{point}: {st}");
        let restored = st[0]["restores"].as_u64();
        if point == "committed" {
            assert_eq!(restored, Some(2), "{point}: {st}");
        } else {
            assert_eq!(restored, Some(1), "{point}: the previous generation runs on: {st}");
            let kept: Vec<u64> = serde_json::from_str::<serde_json::Value>(
                &sb.run(&app, &["status", "--generations", "--json"]).ok().stdout,
            )
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["generation"].as_u64().unwrap())
            .collect();
            assert!(!kept.contains(&st[0]["generation"].as_u64().map_or(0, |g| g + 1)), "{point}: {kept:?}");
        }
    }

    // Nor is the build cache: without the sources it holds, a chain that cannot be
    // compiled natively again runs interpreted, and says why. The newest five
    // generations are kept.
    std::fs::remove_dir_all(&sb.cache).unwrap();
    for _ in 0..3 {
        sb.run(&app, &["rollback"]).ok();
    }
    let tier = &sb.status()[0]["chains"][0]["tier"];
    assert!(tier["tier"] == "native" || tier["reason"].as_str().is_some_and(|r| !r.is_empty()), "{tier}");
    let run = sb.run(&app, &["status", "--generations"]).ok();
    let numbers: Vec<u64> =
        run.stdout.lines().filter_map(|l| l.strip_prefix("generation ")?.split(' ').next()?.parse().ok()).collect();
    assert_eq!(numbers.len(), 5, "{}", run.stdout);
    assert!(!numbers.contains(&1) && !numbers.contains(&2), "the oldest went: {}", run.stdout);
    sb.run(&app, &["uninstall"]).ok();
    assert_eq!(
        std::fs::read_dir(sb.path("state/generations")).map(|d| d.count()).unwrap_or(0),
        0,
        "an uninstall forgets its generations"
    );
}

/// A chain's name, id and native program id.
type ChainIds = (String, u64, Option<u64>);

/// The deployment's chains, and its loader instances.
fn chains_and_loaders(sb: &Sandbox) -> (Vec<ChainIds>, Vec<String>) {
    let st = sb.status();
    let chains = st[0]["chains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["id"].as_u64().unwrap(), c["tier"]["bpf_id"].as_u64()))
        .collect();
    let loaders =
        st[0]["loaders"].as_array().unwrap().iter().map(|l| l["instance"].as_str().unwrap().to_owned()).collect();
    (chains, loaders)
}

/// Owners of the root's chains, as the runtime records them.
fn chain_owners(sb: &Sandbox) -> Vec<String> {
    let rt = hike_runtime::Runtime::open(&sb.root).unwrap();
    let mut owners: Vec<String> = rt.status().unwrap().chains.into_iter().map(|c| c.owner).collect();
    owners.sort();
    owners
}

#[test]
fn a_redeploy_keeps_the_chains_and_loaders_that_did_not_change() {
    let (sb, app) = setup("reuse");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let (chains, loaders) = chains_and_loaders(&sb);
    assert!(chains[0].2.is_some(), "the chain runs natively: {chains:?}");
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);

    // A comment in the chain script: a new generation, but the same code.
    let script = app.join("chains/guard.eclat");
    let text = std::fs::read_to_string(&script).unwrap();
    std::fs::write(&script, format!("{text}# reviewed\n")).unwrap();
    let run = sb.run(&app, &["install"]).ok();
    assert!(run.stderr.contains("Keeping chain guard (chains/guard.eclat) as chain"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("Keeping loader instance {} (unchanged)", loaders[0])), "{}", run.stderr);
    for absent in ["Switched", "Native", "Loaded", "Installed chain"] {
        assert!(!run.stderr.contains(absent), "{absent}: {}", run.stderr);
    }
    let st = sb.status();
    assert_eq!((st[0]["generation"].as_u64(), st[0]["running"].as_bool()), (Some(2), Some(true)), "{st}");
    assert_eq!(chains_and_loaders(&sb), (chains.clone(), loaders.clone()), "same ids, native program and instance");
    assert_eq!(chain_owners(&sb), ["app#2"], "the kept chain belongs to the new generation");
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    assert_eq!(count(&sb, 0), 2);

    // Another interface: the same loader instance moves there, nothing is loaded.
    let run = sb.run(&app, &["install", "--set", "DEVNAME=vb"]).ok();
    assert!(run.stderr.contains("Keeping chain guard"), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("Attached vb to {}", loaders[0])), "{}", run.stderr);
    assert!(!run.stderr.contains("Loaded"), "{}", run.stderr);
    assert_eq!(chains_and_loaders(&sb), (chains.clone(), loaders.clone()));
    assert_eq!(attachments(&sb), [("vb".to_owned(), "xdp".to_owned())], "and off va");
    let rt = hike_runtime::Runtime::open(&sb.root).unwrap();
    let info = rt.loader_info(&loaders[0]).unwrap();
    assert_eq!(info.attachments.iter().map(|a| a.interface.as_str()).collect::<Vec<_>>(), ["vb"]);
    drop(rt);

    // Killed after it took the chain over, and while moving the kept loader: the
    // next command gives the chain back and leaves the loader where it was.
    for point in ["loaders", "switching"] {
        let out = sb.cmd(&app, &["install", "--set", "DEVNAME=va"]).env("EBPKG_CRASH_AT", point).output().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(9), "{point}: {out:?}");
        let run = sb.run(sb.dir.path(), &["status"]).ok();
        assert!(run.stderr.contains("Recovered app:"), "{point}: {}", run.stderr);
        let st = sb.status();
        assert_eq!((st[0]["generation"].as_u64(), st[0]["running"].as_bool()), (Some(3), Some(true)), "{st}");
        assert_eq!(chain_owners(&sb), ["app#3"], "{point}: given back to the running generation");
        assert_eq!(attachments(&sb), [("vb".to_owned(), "xdp".to_owned())], "{point}");
    }
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert_eq!(chains_and_loaders(&sb), (chains.clone(), loaders.clone()));
    assert_eq!(attachments(&sb), [("va".to_owned(), "xdp".to_owned())]);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);

    // --force makes everything anew.
    let run = sb.run(&app, &["install", "--force"]).ok();
    assert!(!run.stderr.contains("Keeping chain"), "{}", run.stderr);
    assert_ne!(chains_and_loaders(&sb).0, chains);
    assert_eq!(chain_owners(&sb).len(), 1, "the replaced chain is gone: {:?}", chain_owners(&sb));
}
