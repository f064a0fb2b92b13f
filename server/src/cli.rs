//! The `posthorn` command line.

use std::sync::Arc;

use app::cfg::Config;
use clap::{Parser, Subcommand};
use tokio::sync::watch;

use crate::{dispatcher::Dispatcher, metrics::Metrics, web};

#[derive(Parser)]
#[command(
    name = "posthorn",
    about = "Webhook delivery: API, dashboard, inspector and dispatcher",
    version
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Serve the dashboard, public API and inspector, and run the dispatcher (the default).
    Serve {
        /// Leave delivery to separate `posthorn dispatch` processes (servers behind a load
        /// balancer, as in deploy/local-cluster.sh).
        #[arg(long)]
        no_dispatch: bool,
    },
    /// Run only the dispatcher; any number may run against one database.
    Dispatch,
    /// Apply database migrations.
    Migrate,
    /// Create the demo project, users, endpoints and deliveries (idempotent).
    SeedDemo,
    /// Create a project and its owner; prints {"project_id":…,"api_key":…}.
    CreateProject {
        #[arg(long)]
        name: String,
        #[arg(long)]
        owner_email: String,
        #[arg(long)]
        owner_password: String,
        #[arg(long, default_value = "trial", value_parser = ["trial", "business"])]
        plan: String,
    },
    /// Create an operator key for /operator/v1; prints {"operator_key":…} (shown once).
    CreateOperatorKey {
        #[arg(long)]
        name: String,
    },
    /// Revoke the operator key with this name.
    RevokeOperatorKey {
        #[arg(long)]
        name: String,
    },
    /// Re-seal every secret under the first key of POSTHORN_ENCRYPTION_KEY (list the new
    /// key first and the old one after it, comma-separated; drop the old one afterwards).
    RotateEncryptionKey,
    /// Forward a project's deliveries to a local URL (the API key in POSTHORN_API_KEY).
    Listen(crate::listen::client::Args),
    /// Create a user (support staff read every project).
    CreateUser {
        #[arg(long)]
        email: String,
        #[arg(long)]
        password: String,
        #[arg(long, default_value = "support", value_parser = ["support", "user"])]
        role: String,
    },
}

pub type Failure = Box<dyn std::error::Error + Send + Sync>;

pub async fn run(cli: Cli) -> Result<(), Failure> {
    // A developer's machine: no database, no server configuration.
    if let Some(Command::Listen(args)) = cli.command {
        return crate::listen::client::run(args).await;
    }
    let cfg = Arc::new(Config::from_env().map_err(|e| format!("configuration: {e}"))?);
    let command = cli.command.unwrap_or(Command::Serve { no_dispatch: false });
    let pool_size = match command {
        Command::Serve { .. } | Command::Dispatch => 32,
        _ => 4,
    };
    let pool = app::db::connect(&cfg.database_url, pool_size)
        .await
        .map_err(|e| format!("cannot connect to the database: {e}"))?;
    app::db::migrate(&pool).await?;
    web::session_store(&pool).migrate().await?;
    app::db::maintenance::ensure_partitions(&pool, 15, 7).await?;
    secrets_at_rest(&pool, &cfg, &command).await?;
    match command {
        Command::Migrate => {
            tracing::info!("migrations applied");
        }
        Command::SeedDemo => {
            let id = crate::seed::seed_demo(&pool).await?;
            tracing::info!(project_id = id.get(), "demo data ready");
        }
        Command::CreateProject {
            name,
            owner_email,
            owner_password,
            plan,
        } => {
            let (project_id, key) = app::use_cases::projects::create_with_owner(
                &pool,
                &name,
                &plan,
                &owner_email,
                &owner_password,
            )
            .await?;
            println!(
                "{}",
                serde_json::json!({ "project_id": project_id, "api_key": key })
            );
        }
        Command::CreateOperatorKey { name } => {
            let key = app::use_cases::accounts::create_operator_key(&pool, &name).await?;
            println!("{}", serde_json::json!({ "operator_key": key }));
        }
        Command::RevokeOperatorKey { name } => {
            match app::use_cases::accounts::revoke_operator_key(&pool, &name).await {
                Err(app::error::AppError::NotFound) => {
                    return Err(format!("no live operator key is named `{name}`").into())
                }
                done => done?,
            }
            println!("{}", serde_json::json!({ "revoked": name }));
        }
        Command::RotateEncryptionKey => {
            let keyring = app::core::sealed::keyring()
                .ok_or("POSTHORN_ENCRYPTION_KEY is unset: give the new key, then the old one")?;
            let done = app::db::sealing::reseal(&pool, keyring).await?;
            let left = app::db::sealing::keys_in_use(&pool).await?;
            let unbound = app::db::sealing::unbound_values(&pool).await?;
            let others: i64 = left
                .iter()
                .filter(|(id, _)| id != keyring.current_id())
                .map(|(_, n)| n)
                .sum();
            println!(
                "{}",
                serde_json::json!({
                    "key": keyring.current_id(),
                    "endpoints": done.endpoints,
                    "values": done.values,
                    "under_other_keys": others,
                    "refused": done.refused,
                    "unbound": unbound,
                })
            );
        }
        // Answered above, before any configuration is read.
        Command::Listen(_) => {}
        Command::CreateUser {
            email,
            password,
            role,
        } => {
            let user =
                app::use_cases::accounts::create_user(&pool, &email, &password, &role).await?;
            println!(
                "{}",
                serde_json::json!({ "user_id": user.id, "email": user.email, "role": user.role })
            );
        }
        Command::Dispatch => {
            let (tx, rx) = watch::channel(false);
            tokio::spawn(async move {
                shutdown_signal().await;
                let _ = tx.send(true);
            });
            let dispatch_pool = app::db::connect_dispatcher(&cfg.database_url, 16).await?;
            // Lanes its outcome writer leaves are released here too, whether or not a
            // `serve` is running.
            let replayer = tokio::spawn(crate::replayer::run(pool, rx.clone()));
            let metrics = Arc::new(Metrics::default());
            crate::telemetry::export_metrics(metrics.clone());
            Dispatcher::new(dispatch_pool, cfg, metrics).run(rx).await;
            let _ = replayer.await;
        }
        Command::Serve { no_dispatch } => serve(pool, cfg, !no_dispatch).await?,
    }
    Ok(())
}

/// Installs the keys of `POSTHORN_ENCRYPTION_KEY` and holds the database to them: a
/// process that cannot open what is stored, or one without a key where a keyed process
/// has run, does not start. A keyed process marks the database sealed and, the first
/// time, seals what is still plain or of the earlier format bound to its endpoint;
/// without a key, the process says that nothing is sealed.
async fn secrets_at_rest(
    pool: &sqlx::PgPool,
    cfg: &Config,
    command: &Command,
) -> Result<(), Failure> {
    use app::{core::sealed, db::sealing};
    let keyring = match cfg.encryption_key.as_ref() {
        Some(text) => {
            Some(sealed::Keyring::parse(&text.0).map_err(|e| format!("configuration: {e}"))?)
        }
        None => None,
    };
    sealed::install(keyring);
    let keyring = sealed::keyring();
    if !matches!(command, Command::RotateEncryptionKey) {
        sealing::check(pool, keyring).await?;
    }
    let Some(k) = keyring else {
        tracing::warn!(
            "POSTHORN_ENCRYPTION_KEY is unset: endpoint secrets, custom header values and client keys are stored in plain text"
        );
        return Ok(());
    };
    // The rotation re-seals everything itself.
    if matches!(command, Command::RotateEncryptionKey) {
        return Ok(());
    }
    if let Some(done) = sealing::settle(pool, k).await? {
        tracing::info!(key = k.current_id(), endpoints = done.endpoints, values = done.values, "sealed the secrets stored in plain text or the earlier format, each bound to its endpoint");
    }
    let unbound = sealing::unbound_values(pool).await?;
    if unbound > 0 {
        tracing::warn!(values = unbound, "secrets stored in plain text or the earlier format beside sealed ones are refused: set them again through the API");
    }
    Ok(())
}

async fn serve(pool: sqlx::PgPool, cfg: Arc<Config>, dispatch: bool) -> Result<(), Failure> {
    let metrics = Arc::new(Metrics::default());
    metrics.watch_pool("main", &pool);
    crate::telemetry::export_metrics(metrics.clone());
    let (tx, rx) = watch::channel(false);
    let (handoff, dispatcher) = if dispatch {
        let dispatch_pool = app::db::connect_dispatcher(&cfg.database_url, 16).await?;
        let mut dispatcher = Dispatcher::new(dispatch_pool, cfg.clone(), metrics.clone());
        let handoff = cfg.handoff.then(|| dispatcher.handoff());
        (handoff, Some(tokio::spawn(dispatcher.run(rx.clone()))))
    } else {
        (None, None)
    };
    let maintenance = tokio::spawn(crate::maintenance::run(
        pool.clone(),
        cfg.retention_days,
        cfg.auto_disable_after,
        metrics.clone(),
        rx.clone(),
    ));
    let replayer = tokio::spawn(crate::replayer::run(pool.clone(), rx.clone()));
    let mailer = crate::alerts::Mailer::from_config(&cfg)?;
    let alerts = tokio::spawn(crate::alerts::run(
        pool.clone(),
        cfg.alert_interval,
        mailer,
        rx.clone(),
    ));
    let group = (cfg.ingest_writers > 0)
        .then(|| app::db::group_commit::GroupCommit::start(pool.clone(), cfg.ingest_writers));
    let state = web::AppState {
        leptos_options: web::leptos_options(&cfg),
        pool,
        cfg: cfg.clone(),
        metrics,
        handoff,
        group,
        targets: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind(cfg.site_addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", cfg.site_addr))?;
    tracing::info!("listening on http://{}", cfg.site_addr);
    let mut stop = rx.clone();
    let served = web::serve(state, listener, async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    let signal = async move {
        shutdown_signal().await;
        let _ = tx.send(true);
    };
    let (result, _) = tokio::join!(served, signal);
    result?;
    if let Some(dispatcher) = dispatcher {
        let _ = dispatcher.await;
    }
    let _ = maintenance.await;
    let _ = replayer.await;
    let _ = alerts.await;
    Ok(())
}

pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("shutting down");
}
