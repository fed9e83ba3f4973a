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
    reg.add("foo", "1.0.0", &[("a", "^1"), ("b", "^1")]).add("foo", "1.1.0", &[("x", "^1"), ("y", "^1")])
        .add("a", "1.0.0", &[("b", "^2")]).add("b", "1.0.0", &[]).add("b", "2.0.0", &[])
        .add("x", "1.0.0", &[("y", "^2")]).add("y", "1.0.0", &[]).add("y", "2.0.0", &[]);
    show(&reg, &request(&[("foo", "^1")]));
    // yanked locked + update all
    let mut r2 = Registry::new();
    r2.add("meter", "1.0.0", &[]).add_yanked("meter", "1.1.0", &[]);
    let mut q = request(&[("meter", "=1.1.0")]);
    q.locked = vec![(id("meter"), v("1.1.0"))];
    show(&r2, &q);
    q.update = UpdatePolicy::All;
    show(&r2, &q);
    // self dep
    let mut r3 = Registry::new();
    r3.add("meter", "1.0.0", &[("meter", "^1")]);
    show(&r3, &request(&[("meter", "^1")]));
    // other registry
    let mut r4 = Registry::new();
    r4.add("meter@https://r.example", "1.0.0", &[]).add("ddos", "1.0.0", &[("meter@https://r.example", "^2")]);
    show(&r4, &request(&[("ddos", "^1")]));
    // many versions
    let mut r5 = Registry::new();
    for m in 0..12 { r5.add("meter", &format!("1.{m}.0"), &[]); }
    for m in 0..3 { r5.add("ddos", &format!("1.{m}.0"), &[("meter", "~1.2")]); }
    r5.add("ddos", "1.3.0", &[("meter", ">=1.4, <1.9")]);
    show(&r5, &request(&[("ddos", "^1"), ("meter", ">=1.10")]));
}
