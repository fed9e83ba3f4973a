//! What the privacy check of a cache costs (`ebpkg_fs::private::check_tree` at
//! the CLI's depth): `cargo run --release -p ebpkg-fs --example cache_check_cost -- <cache dir>`.
//! Prints the median of 101 runs, warm.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os().nth(1).ok_or("usage: cache_check_cost <cache dir>")?;
    let dir = std::path::PathBuf::from(dir);
    let mut times = Vec::new();
    for _ in 0..101 {
        let start = std::time::Instant::now();
        ebpkg_fs::private::check_tree(&dir, 4, 100_000)?;
        times.push(start.elapsed());
    }
    times.sort();
    println!("{}: median {:?}", dir.display(), times[times.len() / 2]);
    Ok(())
}
