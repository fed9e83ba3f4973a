#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use common::*;
use ebpkg_resolver::*;

fn show(reg: &Registry, req: &ResolveRequest) {
    match resolve(req, reg) {
        Ok(r) => println!("OK {:?}", r.packages.iter().map(|(k, v)| format!("{k} {}", v.version)).collect::<Vec<_>>()),
        Err(e) => println!("{e}\n"),
    }
}

#[test]
fn scratch() {
    let mut reg = Registry::new();
    reg.add("ddos", "1.4.0", &[("meter", "^1")]).add("meter", "1.0.0", &[]).add("meter", "1.2.0", &[]).add(
        "meter",
        "2.0.0",
        &[],
    );
    show(&reg, &request(&[("ddos", "^1.4"), ("meter", "^2")]));
    reg.add("ddos", "1.0.0", &[("meter", "^1")]).add("ddos", "1.2.0", &[("meter", "^1")]);
    show(&reg, &request(&[("ddos", "^1"), ("meter", "^2")]));
    reg.add("ddos", "2.0.0", &[("meter", "^2")]);
    show(&reg, &request(&[("ddos", "^1"), ("meter", "^2")]));
    // yanked
    let mut r2 = Registry::new();
    r2.add("meter", "1.0.0", &[]).add_yanked("meter", "2.0.0", &[]);
    show(&r2, &request(&[("meter", "^2")]));
    // nothing matches + prerelease
    let mut r3 = Registry::new();
    r3.add("meter", "1.2.0", &[]).add("meter", "1.3.0-rc.1", &[]);
    show(&r3, &request(&[("meter", "^1.3")]));
    // two non-root
    let mut r4 = Registry::new();
    r4.add("ddos", "1.0.0", &[("meter", "^1")])
        .add("ddos", "1.1.0", &[("meter", "^1")])
        .add("shaper", "1.0.0", &[("meter", "^1")])
        .add("shaper", "2.0.0", &[("meter", "^2")])
        .add("meter", "1.0.0", &[])
        .add("meter", "2.0.0", &[]);
    show(&r4, &request(&[("ddos", "^1"), ("shaper", "^2")]));
    // transitive unknown
    let mut r5 = Registry::new();
    r5.list_names = true;
    r5.add("ddos", "1.0.0", &[("metr", "^1")]).add("meter", "1.0.0", &[]);
    show(&r5, &request(&[("ddos", "^1")]));
    show(&r5, &request(&[("metr", "^1")]));
    // deeper chain
    let mut r6 = Registry::new();
    r6.add("a", "1.0.0", &[("b", "^1")])
        .add("b", "1.0.0", &[("c", "^1")])
        .add("b", "1.1.0", &[("c", "^1")])
        .add("c", "1.0.0", &[("d", "^1")])
        .add("d", "1.0.0", &[])
        .add("d", "2.0.0", &[]);
    show(&r6, &request(&[("a", "^1"), ("d", "^2")]));
}
