//! The fleet entrypoint (`deploy/container/ebpkg-node`, what the Kubernetes
//! DaemonSet and the systemd unit run) on the real kernel: `fetch` fills the
//! cache from what ebpkg.lock pins, `run` installs with `--frozen` — with the
//! registry gone — and stays, `ready` says when the deployment runs, and
//! SIGTERM uninstalls and exits 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;

use common::Sandbox;

fn node() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/container/ebpkg-node")
}

#[test]
fn the_node_entrypoint_installs_frozen_stays_and_uninstalls_on_sigterm() {
    let sb = Sandbox::with_veth("fleet", "va", "vb");
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    let app = sb.package("app");
    sb.run(&app, &["lock"]).ok();
    // The project as a ConfigMap mounts it: flat, chain scripts beside the manifest.
    let source = sb.path("configmap");
    std::fs::create_dir_all(&source).unwrap();
    for f in ["ebpkg.toml", "ebpkg.lock"] {
        std::fs::copy(app.join(f), source.join(f)).unwrap();
    }
    std::fs::copy(app.join("chains/guard.eclat"), source.join("guard.eclat")).unwrap();

    let env = format!(
        "export EBPKG=\"$(command -v ebpkg)\" EBPKG_PROJECT_SOURCE={} EBPKG_PROJECT={} EBPKG_SET=DEVNAME=va",
        source.display(),
        sb.path("node/project").display()
    );
    let node = node();
    let node = node.display();
    let fetched = sb.shell(sb.dir.path(), &format!("{env}; {node} fetch")).ok();
    assert!(fetched.stderr.contains("fetching what ebpkg.lock pins"), "{}", fetched.stderr);

    // The registry is gone: a restarted node's `fetch` falls back to the cache
    // (exit 6 only), and `run` needs nothing but the cache.
    std::fs::rename(sb.path("registry"), sb.path("registry.away")).unwrap();
    let refetched = sb.shell(sb.dir.path(), &format!("{env}; {node} fetch")).ok();
    assert!(refetched.stderr.contains("using the cache"), "{}", refetched.stderr);
    let script = format!(
        r#"{env}
        {node} ready && {{ echo "ready before anything was installed"; exit 1; }}
        {node} run 2>"$PWD/run.log" &
        pid=$!
        for _ in $(seq 600); do {node} ready && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
        {node} ready || {{ echo "never ready"; cat run.log; exit 1; }}
        ebpkg status app
        ip -d link show va | grep -q xdp || {{ echo "va has no XDP program"; exit 1; }}
        kill -TERM $pid
        wait $pid; code=$?
        cat run.log
        echo "run exited $code"
        [ "$code" = 0 ]
        {node} ready && {{ echo "still ready after SIGTERM"; exit 1; }}
        ip -d link show va | grep -q xdp && {{ echo "XDP still attached"; exit 1; }}
        ebpkg status
        "#
    );
    let run = sb.shell(sb.dir.path(), &script).ok();
    assert!(run.stdout.contains("deployment app (generation 1): running"), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("installing app as locked (no network)"), "{}", run.stdout);
    assert!(run.stdout.contains("stopping: uninstalling app"), "{}", run.stdout);
    assert!(run.stdout.contains("run exited 0"), "{}", run.stdout);
    assert!(run.stdout.contains("no deployments"), "{}", run.stdout);
}
