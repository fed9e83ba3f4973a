//! TUF metadata over the index files this server serves (`ebpkg-tuf`). The
//! metadata lives in `tuf_files`; a publish or yank re-signs the changed file's
//! bin, the snapshot and the timestamp in the transaction that changes the
//! index file, under a lock on every metadata row, so the metadata served always
//! signs exactly the index files served. The signing runs off the async threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ebpkg_tuf::{Expiry, MemStore};

use crate::config::Config;
use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Re-signs the metadata for changed index files (`index/…`, bytes), in `tx`.
/// Nothing to do when the registry has no TUF metadata.
pub async fn follow(tx: &mut sqlx::PgConnection, config: &Config, changes: Vec<(String, Vec<u8>)>) -> ApiResult<()> {
    let Some(files) = db::tuf::lock_all(tx).await? else { return Ok(()) };
    let Some(key) = config.tuf_online_key.clone() else {
        return Err(ApiError::internal(
            "this registry has TUF metadata but no online key to re-sign it (--tuf-online-key); nothing was changed; \
             tell the registry's operator",
        ));
    };
    let changes: Vec<ebpkg_tuf::repo::Change> = changes.into_iter().map(|(t, b)| (t, Some(b))).collect();
    let store = resign(files, move |store| {
        ebpkg_tuf::repo::update(store, &key, &changes, jiff::Timestamp::now(), &Expiry::default())
    })
    .await?;
    for (name, bytes) in store.written() {
        db::tuf::write(tx, name, bytes).await?;
    }
    Ok(())
}

/// Makes the metadata sign this server's `index/config.json` (its bytes change
/// with `--public-url`, `--dl-template`, `--auth-required`…): checked once per
/// process, before the first metadata file is served, so a client that trusts
/// the metadata can trust the configuration too.
pub async fn sign_config(state: &AppState) -> ApiResult<()> {
    use std::sync::atomic::Ordering;
    if state.config_signed.load(Ordering::Acquire) {
        return Ok(());
    }
    let bytes = state.config.index_config_bytes();
    let target = ebpkg_spec::registry_api::INDEX_CONFIG_PATH;
    // Read first, without locking: metadata readers must not queue behind one another.
    let bin = format!("{}.json", ebpkg_tuf::bins::bin_of(target));
    let Some(bin_bytes) = db::tuf::file(&state.db, &bin).await? else { return Ok(()) };
    let signs = |store: &MemStore| {
        ebpkg_tuf::repo::signs(store, target, &bytes)
            .map_err(|e| ApiError::internal(format!("reading TUF metadata: {e}")))
    };
    if signs(&MemStore::new(BTreeMap::from([(bin, bin_bytes)])))? {
        state.config_signed.store(true, Ordering::Release);
        return Ok(());
    }
    if state.config.tuf_online_key.is_none() {
        // Said once; clients that trust the metadata refuse the configuration.
        state.config_signed.store(true, Ordering::Release);
        tracing::warn!("index/config.json is not signed by the TUF metadata and there is no online key to sign it");
        return Ok(());
    }
    let mut tx = state.db.begin().await?;
    let Some(files) = db::tuf::lock_all(&mut tx).await? else { return Ok(()) };
    // Checked again under the lock: another replica may have signed it meanwhile.
    if !signs(&MemStore::new(files))? {
        follow(&mut tx, &state.config, vec![(target.to_owned(), bytes)]).await?;
        tx.commit().await?;
        tracing::info!("index/config.json signed by the TUF metadata");
    }
    state.config_signed.store(true, Ordering::Release);
    Ok(())
}

async fn resign(
    files: BTreeMap<String, Vec<u8>>,
    change: impl FnOnce(&mut MemStore) -> ebpkg_tuf::Result<()> + Send + 'static,
) -> ApiResult<MemStore> {
    tokio::task::spawn_blocking(move || {
        let mut store = MemStore::new(files);
        change(&mut store).map(|()| store)
    })
    .await
    .map_err(|e| ApiError::internal(format!("signing TUF metadata: {e}")))?
    .map_err(|e| ApiError::internal(format!("signing TUF metadata: {e}")))
}

/// `ebpkg-registry tuf init`: creates the metadata over every index file, with
/// the offline root keys (for root and targets, `threshold` of them needed) and
/// the online key. Keys that do not exist are generated (mode 0600). Returns the
/// number of files signed (index files and attestation files).
pub async fn init(
    pool: &sqlx::PgPool,
    root_keys: &[PathBuf],
    threshold: u64,
    online_key: &Path,
) -> anyhow::Result<usize> {
    for key in root_keys.iter().map(PathBuf::as_path).chain([online_key]) {
        if !key.exists() {
            ebpkg_tuf::keys::generate(key)?;
            eprintln!("generated TUF key {} (mode 0600)", key.display());
        }
    }
    let mut tx = pool.begin().await?;
    if db::tuf::lock_all(&mut tx).await?.is_some() {
        anyhow::bail!("this registry has TUF metadata already; rotate its root instead of starting over");
    }
    let mut targets = db::tuf::index_targets(&mut *tx).await?;
    // Attestation files published before the metadata existed are signed too.
    targets.extend(db::attestations::targets(&mut *tx).await?);
    let count = targets.len();
    let (root_keys, online_key) = (root_keys.to_vec(), PathBuf::from(online_key));
    let store = resign(BTreeMap::new(), move |store| {
        let now = jiff::Timestamp::now();
        ebpkg_tuf::repo::init(store, &root_keys, threshold, &online_key, &targets, now, &Expiry::default())
    })
    .await
    .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
    for (name, bytes) in store.written() {
        db::tuf::write(&mut tx, name, bytes).await?;
    }
    tx.commit().await?;
    Ok(count)
}

/// Re-signs the timestamp (and what would expire within a day). Run by `serve`
/// every hour and by `ebpkg-registry tuf refresh`.
pub async fn refresh(pool: &sqlx::PgPool, online_key: &Path) -> anyhow::Result<bool> {
    let mut tx = pool.begin().await?;
    let Some(files) = db::tuf::lock_all(&mut tx).await? else { return Ok(false) };
    let key = PathBuf::from(online_key);
    let store =
        resign(files, move |store| ebpkg_tuf::repo::refresh(store, &key, jiff::Timestamp::now(), &Expiry::default()))
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
    for (name, bytes) in store.written() {
        db::tuf::write(&mut tx, name, bytes).await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// `ebpkg-registry tuf rotate`: replaces offline and/or online keys (see
/// `ebpkg_tuf::repo::rotate`) in one transaction. Serve with the new online key
/// afterwards.
pub async fn rotate(pool: &sqlx::PgPool, rotation: ebpkg_tuf::repo::Rotation) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    let Some(files) = db::tuf::lock_all(&mut tx).await? else {
        anyhow::bail!("this registry has no TUF metadata; create it with `ebpkg-registry tuf init`");
    };
    let store = resign(files, move |store| {
        ebpkg_tuf::repo::rotate(store, &rotation, jiff::Timestamp::now(), &Expiry::default())
    })
    .await
    .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
    for (name, bytes) in store.written() {
        db::tuf::write(&mut tx, name, bytes).await?;
    }
    tx.commit().await?;
    Ok(())
}
