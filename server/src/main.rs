use clap::Parser;
use server::cli::{run, Cli};

// glibc's allocator took a quarter of the server's CPU in a fan-out (malloc, free and
// their consolidation, for the many short-lived buffers of each send and outcome).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let telemetry = server::telemetry::init();
    if let Err(e) = run(Cli::parse()).await {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(&format!(": {s}"));
            source = s.source();
        }
        eprintln!("posthorn: {message}");
        drop(telemetry);
        std::process::exit(1);
    }
}
