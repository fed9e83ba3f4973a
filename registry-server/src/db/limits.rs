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
/// the next token. The row keeps the tokens spent and when: what is left is
/// `burst` minus what was spent, less what refilled since, so a bucket resized
/// by the operator counts from its new size at once.
pub async fn take(
    tx: &mut PgConnection,
    user_id: i64,
    action: Action,
    bucket: Bucket,
) -> Result<Result<(), u64>, sqlx::Error> {
    sqlx::query!(
        "INSERT INTO publish_limit_buckets (user_id, action, spent, spent_at) VALUES ($1, $2, 0, now()) \
         ON CONFLICT DO NOTHING",
        user_id,
        action.key(),
    )
    .execute(&mut *tx)
    .await?;
    let row = sqlx::query!(
        r#"SELECT spent, extract(epoch FROM now() - spent_at)::float8 AS "elapsed!" FROM publish_limit_buckets
           WHERE user_id = $1 AND action = $2 FOR UPDATE"#,
        user_id,
        action.key(),
    )
    .fetch_one(&mut *tx)
    .await?;
    match spend(row.spent, row.elapsed, bucket) {
        Err(wait) => Ok(Err(wait)),
        Ok(spent) => {
            sqlx::query!(
                "UPDATE publish_limit_buckets SET spent = $3, spent_at = now() WHERE user_id = $1 AND action = $2",
                user_id,
                action.key(),
                spent,
            )
            .execute(&mut *tx)
            .await?;
            Ok(Ok(()))
        }
    }
}

/// One more token from a bucket that had spent `spent` tokens `elapsed` seconds
/// ago: the new amount spent, or the whole seconds to wait (at least one).
fn spend(spent: f64, elapsed: f64, bucket: Bucket) -> Result<f64, u64> {
    let interval = bucket.interval.as_secs_f64().max(f64::MIN_POSITIVE);
    let now_spent = (spent - elapsed.max(0.0) / interval).max(0.0);
    let burst = f64::from(bucket.burst);
    if now_spent + 1.0 > burst {
        let wait = ((now_spent + 1.0 - burst) * interval).ceil();
        // The cast saturates.
        return Err((wait as u64).max(1));
    }
    Ok(now_spent + 1.0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::spend;
    use crate::config::Bucket;

    #[test]
    fn a_bucket_refills_and_a_resized_one_counts_from_its_new_size() {
        let five = Bucket { burst: 5, interval: Duration::from_secs(600) };
        let mut spent = 0.0;
        for _ in 0..5 {
            spent = spend(spent, 0.0, five).unwrap();
        }
        assert_eq!(spend(spent, 0.0, five), Err(600));
        assert_eq!(spend(spent, 300.0, five), Err(300));
        assert!(spend(spent, 600.0, five).is_ok());
        // The operator makes it 20: fifteen more at once, no waiting out the old size.
        let twenty = Bucket { burst: 20, interval: Duration::from_secs(600) };
        for _ in 0..15 {
            spent = spend(spent, 0.0, twenty).unwrap();
        }
        assert!(spend(spent, 0.0, twenty).is_err());
        // And made smaller again: what was spent is over it, so the wait is longer.
        assert_eq!(spend(20.0, 0.0, five), Err(16 * 600));
    }
}
