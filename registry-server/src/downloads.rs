//! Download counts, added up in memory and written in one statement a second, so
//! serving an archive costs no database write. A crash loses at most the last
//! second's counts.

use std::collections::HashMap;
use std::sync::Mutex;

use sqlx::PgPool;

#[derive(Default)]
pub struct DownloadCounter {
    pending: Mutex<HashMap<i64, i64>>,
}

impl DownloadCounter {
    pub fn count(&self, version_id: i64) {
        let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *pending.entry(version_id).or_default() += 1;
    }

    /// Writes what was counted; on failure puts it back for the next flush.
    pub async fn flush(&self, db: &PgPool) {
        let counts: Vec<(i64, i64)> = {
            let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.drain().collect()
        };
        if counts.is_empty() {
            return;
        }
        let result = async {
            let mut tx = db.begin().await?;
            crate::db::packages::add_downloads(&mut tx, &counts).await?;
            tx.commit().await
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "download counts not written yet; retrying");
            let mut pending = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for (id, n) in counts {
                *pending.entry(id).or_default() += n;
            }
        }
    }
}
