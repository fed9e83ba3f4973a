//! A new version of one package, published upstream the way `ebpkg-registry`'s
//! publish changes its database: the package's index file rewritten, its TUF bin,
//! snapshot and timestamp re-signed with the online key (`ebpkg_tuf::repo::update`,
//! what the server's `tuf::follow` runs), and every replica's index cache told
//! (`NOTIFY ebpkg_index`), in one transaction. Not through the publish API: it
//! rebuilds the index file from the `versions` table, which the benchmark's
//! directly loaded registry leaves empty.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_registry_testing::Database;

/// The channel the server's index caches listen on (`db::INDEX_CHANNEL`).
const INDEX_CHANNEL: &str = "ebpkg_index";

/// One package of a registry served from `db`, and its index file as served.
pub struct Upstream<'a> {
    pub db: &'a Database,
    /// A directory the database server can read (its socket directory): the
    /// new files reach it through `pg_read_binary_file`, as no command line
    /// holds a 100 kB bin.
    pub scratch: PathBuf,
    pub online_key: &'a Path,
    pub name: String,
    pub index_file: String,
}

impl Upstream<'_> {
    /// Publishes `vers` of the package: a copy of its last line (the same
    /// dependencies) at that version, not yanked, appended to its index file.
    pub fn publish(&mut self, vers: &str) -> Result<()> {
        let newest = self.index_file.lines().last().context("the package's index file is empty")?;
        let mut entry: serde_json::Value = serde_json::from_str(newest).context("its newest index line")?;
        entry["vers"] = serde_json::Value::from(vers);
        entry["yanked"] = serde_json::Value::from(false);
        self.index_file.push_str(&serde_json::to_string(&entry)?);
        self.index_file.push('\n');
        let signed = self.resign()?;
        self.commit(&signed)
    }

    /// The TUF metadata files the change rewrites (name, bytes).
    fn resign(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let target = format!("index/{}", ebpkg_spec::index_path(&self.name));
        let mut store = ebpkg_tuf::MemStore::new(tuf_files(self.db)?);
        let change = (target, Some(self.index_file.as_bytes().to_vec()));
        ebpkg_tuf::repo::update(
            &mut store,
            self.online_key,
            &[change],
            jiff::Timestamp::now(),
            &ebpkg_tuf::Expiry::default(),
        )
        .context("re-signing the TUF metadata for the change")?;
        Ok(store.written().map(|(name, bytes)| (name.to_owned(), bytes.to_vec())).collect())
    }

    /// Writes the index file and the metadata in one transaction (psql sends
    /// the statements as one query), the timestamp among them.
    fn commit(&self, signed: &[(String, Vec<u8>)]) -> Result<()> {
        let index = self.scratch.join("changed-index-file");
        std::fs::write(&index, &self.index_file).with_context(|| format!("writing {}", index.display()))?;
        let mut sql = format!(
            "UPDATE packages SET index_file = convert_from(pg_read_binary_file('{0}'), 'UTF8'), \
             index_sha256 = sha256(pg_read_binary_file('{0}')), index_modified_at = now(), updated_at = now() \
             WHERE normalized_name = '{1}';",
            index.display(),
            self.name
        );
        for (file, bytes) in signed {
            let path = self.scratch.join(format!("changed-tuf-{file}"));
            std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
            let _ = write!(
                sql,
                " INSERT INTO tuf_files (name, bytes) VALUES ('{file}', pg_read_binary_file('{}')) \
                 ON CONFLICT (name) DO UPDATE SET bytes = EXCLUDED.bytes, updated_at = now();",
                path.display()
            );
        }
        let _ = write!(sql, " SELECT pg_notify('{INDEX_CHANNEL}', '{}');", self.name);
        self.db.psql(&sql).context("writing the change into the registry's database")?;
        Ok(())
    }
}

/// Every TUF metadata file of the registry in `db` (name → bytes).
fn tuf_files(db: &Database) -> Result<BTreeMap<String, Vec<u8>>> {
    let rows = db.psql("SELECT name || ' ' || encode(bytes, 'hex') FROM tuf_files")?;
    rows.lines()
        .map(|row| {
            let (name, bytes) = row.split_once(' ').context("a tuf_files row")?;
            Ok((name.to_owned(), hex::decode(bytes).with_context(|| format!("tuf_files row {name}"))?))
        })
        .collect()
}
