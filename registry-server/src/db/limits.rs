//! Publish rate limits: a token bucket per user and action, in the database so
//! every replica enforces the same budget. Taken inside the publish transaction,
//! so a publish that fails gives its token back.

use sqlx::PgConnection;

use crate::config::Bucket;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    NewPackage,
    NewVersion,
}

impl Action {
    fn key(self) -> &'static str {
        match self {
            Action::NewPackage => "new-package",
            Action::NewVersion => "new-version",
        }
    }
}

/// Takes one token; `Err(seconds)` when the bucket is empty, with the wait until
/// the next token.
pub async fn take(
    tx: &mut PgConnection,
    user_id: i64,
    action: Action,
    bucket: Bucket,
) -> Result<Result<(), u64>, sqlx::Error> {
    let burst = f64::from(bucket.burst);
    sqlx::query(
        "INSERT INTO publish_limit_buckets (user_id, action, tokens, last_refill) VALUES ($1, $2, $3, now()) \
         ON CONFLICT DO NOTHING",
    )
    .bind(user_id)
    .bind(action.key())
    .bind(burst)
    .execute(&mut *tx)
    .await?;
    let (tokens, elapsed): (f64, f64) = sqlx::query_as(
        "SELECT tokens, extract(epoch FROM now() - last_refill)::float8 FROM publish_limit_buckets \
         WHERE user_id = $1 AND action = $2 FOR UPDATE",
    )
    .bind(user_id)
    .bind(action.key())
    .fetch_one(&mut *tx)
    .await?;
    let interval = bucket.interval.as_secs_f64().max(f64::MIN_POSITIVE);
    let available = (tokens + elapsed.max(0.0) / interval).min(burst);
    if available < 1.0 {
        let wait = ((1.0 - available) * interval).ceil();
        // Whole seconds, at least one; the cast saturates.
        return Ok(Err((wait as u64).max(1)));
    }
    sqlx::query("UPDATE publish_limit_buckets SET tokens = $3, last_refill = now() WHERE user_id = $1 AND action = $2")
        .bind(user_id)
        .bind(action.key())
        .bind(available - 1.0)
        .execute(&mut *tx)
        .await?;
    Ok(Ok(()))
}
