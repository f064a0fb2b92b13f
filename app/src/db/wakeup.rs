//! Waking the dispatchers when work is queued (LISTEN/NOTIFY).

/// Tells every dispatcher that work is queued. Sent outside the inserting transaction:
/// a lost notification only delays the rows until the next periodic scan (≤ 1 s).
pub async fn wake_dispatchers<'c>(pool: impl sqlx::PgExecutor<'c>) {
    if let Err(e) = sqlx::query!("SELECT pg_notify('posthorn_pending', '')")
        .execute(pool)
        .await
    {
        tracing::warn!(error = %e, "could not wake the dispatchers");
    }
}
