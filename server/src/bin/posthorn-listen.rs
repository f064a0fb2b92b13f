//! `posthorn-listen`: `posthorn listen` alone, for a developer's machine: no server
//! subcommands, and the linker keeps only what the CLI reaches (the debug build is 58 %
//! of the server's).

use clap::Parser;

/// Forward a Posthorn project's deliveries to a local URL (the API key in
/// POSTHORN_API_KEY).
#[derive(Parser)]
#[command(name = "posthorn-listen", version)]
struct Cli {
    #[command(flatten)]
    args: server::listen::client::Args,
}

#[tokio::main]
async fn main() {
    if let Err(e) = server::listen::client::run(Cli::parse().args).await {
        eprintln!("posthorn-listen: {e}");
        std::process::exit(1);
    }
}
