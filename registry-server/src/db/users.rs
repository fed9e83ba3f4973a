//! Accounts. Users are created by the operator (`ebpkg-registry user create`);
//! they own packages and hold tokens.

use sqlx::PgExecutor;

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
    pub login: String,
}

/// Whether `login` is a valid user name (the table's CHECK, said once more so the
/// admin command can explain it before touching the database).
pub fn valid_login(login: &str) -> bool {
    ebpkg_spec::registry_api::limits::valid_login(login)
}

/// Creates a user; `None` when the login is taken.
pub async fn create(db: impl PgExecutor<'_>, login: &str) -> Result<Option<User>, sqlx::Error> {
    sqlx::query_as!(
        User,
        "INSERT INTO users (login) VALUES ($1) ON CONFLICT (login) DO NOTHING RETURNING id, login",
        login
    )
    .fetch_optional(db)
    .await
}

pub async fn by_login(db: impl PgExecutor<'_>, login: &str) -> Result<Option<User>, sqlx::Error> {
    sqlx::query_as!(User, "SELECT id, login FROM users WHERE login = $1", login).fetch_optional(db).await
}
