//! Connections kept out of the pool between the statements of a hot path.
//!
//! The pool checks a connection as it comes back (a round trip, in a task of its own)
//! before anyone may take it again. On the public API's per-request statements and the
//! dispatcher's claims and outcomes that was a second round trip for every statement,
//! and a backend woken for nothing while the next statement waited for a core. A kept
//! connection goes straight back to its set after a statement that succeeded; one whose
//! statement failed, or that sat unused for a second (a server restart may have broken
//! it), goes back to the pool, which checks it.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use sqlx::{pool::PoolConnection, PgConnection, PgPool, Postgres};

/// How long a kept connection may wait unused and still be taken without a check.
const FRESH: Duration = Duration::from_secs(1);

/// Up to `max` connections of `pool` kept between statements.
pub struct Kept {
    pool: PgPool,
    idle: Mutex<Vec<(PoolConnection<Postgres>, Instant)>>,
    max: usize,
}

impl Kept {
    /// With `max` 0 nothing is kept: every statement takes and returns a pooled one.
    pub fn new(pool: PgPool, max: usize) -> Kept {
        Kept {
            pool,
            idle: Mutex::new(Vec::new()),
            max,
        }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Connections kept now.
    pub fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// A kept connection used within the last second, else one from the pool.
    pub async fn get(&self) -> Result<KeptConn<'_>, sqlx::Error> {
        let fresh = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            // Stale ones (dropped here) go back to the pool, which checks them.
            idle.retain(|(_, since)| since.elapsed() < FRESH);
            idle.pop().map(|(conn, _)| conn)
        };
        let conn = match fresh {
            Some(conn) => conn,
            None => self.pool.acquire().await?,
        };
        Ok(KeptConn {
            conn: Some(conn),
            home: self,
        })
    }
}

/// A connection taken from a [`Kept`] set. Dropped, it goes back to the pool; after a
/// statement that succeeded, [`KeptConn::keep`] puts it back in its set.
pub struct KeptConn<'a> {
    conn: Option<PoolConnection<Postgres>>,
    home: &'a Kept,
}

impl KeptConn<'_> {
    pub fn keep(mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let mut idle = self.home.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.home.max {
            idle.push((conn, Instant::now()));
        }
    }

    /// Keeps the connection if the statement succeeded, and passes its result on.
    pub fn keep_if_ok<T, E>(self, result: Result<T, E>) -> Result<T, E> {
        if result.is_ok() {
            self.keep();
        }
        result
    }
}

impl std::ops::Deref for KeptConn<'_> {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.conn
            .as_ref()
            .expect("a kept connection is present until kept")
    }
}

impl std::ops::DerefMut for KeptConn<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn
            .as_mut()
            .expect("a kept connection is present until kept")
    }
}
