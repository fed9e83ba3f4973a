//! The harness against the real PostgreSQL.

#![allow(clippy::unwrap_used)]

use std::time::Instant;

use ebpkg_registry_testing::Postgres;

#[test]
fn databases_of_the_shared_cluster_are_isolated_and_dropped() {
    let start = Instant::now();
    let pg = Postgres::shared().unwrap();
    eprintln!("shared cluster ready in {:?}", start.elapsed());
    let start = Instant::now();
    let (a, b) = (pg.database().unwrap(), pg.database().unwrap());
    eprintln!("two databases in {:?}", start.elapsed());
    a.psql("CREATE TABLE t (x int); INSERT INTO t VALUES (1)").unwrap();
    assert_eq!(a.psql("SELECT count(*) FROM t").unwrap().trim(), "1");
    assert!(b.psql("SELECT count(*) FROM t").is_err(), "b does not see a's table");
    let name = a.name().to_owned();
    drop(a);
    let left = b.psql(&format!("SELECT count(*) FROM pg_database WHERE datname = '{name}'")).unwrap();
    assert_eq!(left.trim(), "0");
}

#[test]
fn a_private_cluster_stops_and_starts_again() {
    let pg = Postgres::start().unwrap();
    let db = pg.database().unwrap();
    db.psql("CREATE TABLE kept (x int)").unwrap();
    pg.stop().unwrap();
    assert!(db.psql("SELECT 1").is_err());
    pg.start_again().unwrap();
    assert_eq!(db.psql("SELECT count(*) FROM kept").unwrap().trim(), "0", "the data survived the restart");
    let dir = pg.socket_dir().to_owned();
    drop(db);
    drop(pg);
    assert!(!dir.exists(), "removed on drop");
}
