use clap::Parser;
use server::cli::{run, Cli};

// glibc's allocator took a quarter of the server's CPU in a fan-out (malloc, free and
// their consolidation, for the many short-lived buffers of each send and outcome).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    // Logs go to stderr: `create-project` prints only its JSON line on stdout. Colours
    // only on a terminal: a log file keeps plain text.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_sessions=warn".into()),
        )
        .init();
    if let Err(e) = run(Cli::parse()).await {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(&format!(": {s}"));
            source = s.source();
        }
        eprintln!("posthorn: {message}");
        std::process::exit(1);
    }
}
