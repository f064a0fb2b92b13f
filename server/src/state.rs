//! What every handler shares: the pool, the configuration, metrics and Leptos' options.

use std::sync::Arc;

use app::cfg::Config;
use axum::extract::FromRef;
use leptos::prelude::*;
use sqlx::PgPool;

use crate::metrics::Metrics;

/// The session cookie's name (the inspector strips it from what it captures).
pub const SESSION_COOKIE: &str = "posthorn_session";
/// The portal's own cookie, named where sign-out reads it (`app::auth`).
pub use app::auth::PORTAL_COOKIE;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub pool: PgPool,
    pub cfg: Arc<Config>,
    pub metrics: Arc<Metrics>,
    /// The dispatcher of this process, when it takes attempts straight from ingest.
    pub handoff: Option<Arc<dyn app::db::queue::handoff::Handoff>>,
    /// The writers that take concurrent API requests' lone events and key hits together.
    pub group: Option<Arc<app::db::group_commit::GroupCommit>>,
    /// Endpoints read for lone events, reused while the project's endpoints are unchanged.
    pub targets: Arc<app::db::targets::TargetCache>,
}

/// Where the build put the bundle's content hashes (`js: …`, `wasm: …`, `css: …`), read by
/// Leptos' `HydrationScripts` and `HashedStylesheet` to link `/pkg/posthorn.<hash>.<ext>`.
const HASH_FILE: &str = "hash.txt";

pub fn leptos_options(cfg: &Config) -> LeptosOptions {
    let site_root = std::env::var("LEPTOS_SITE_ROOT").unwrap_or_else(|_| "target/site".into());
    // Leptos resolves the hash file against the binary's folder; an absolute path keeps it
    // beside the bundle it describes. Without one (a bare `cargo run`), plain names.
    let hash_file = std::path::absolute(std::path::Path::new(&site_root).join(HASH_FILE))
        .ok()
        .filter(|p| p.is_file());
    LeptosOptions::builder()
        .output_name("posthorn")
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .site_addr(cfg.site_addr)
        .hash_files(hash_file.is_some())
        .hash_file(
            hash_file
                .map(|p| p.to_string_lossy().into())
                .unwrap_or_else(|| HASH_FILE.into()),
        )
        .build()
}
