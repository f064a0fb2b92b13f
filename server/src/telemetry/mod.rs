//! What a process tells its operator: logs (text, or JSON with trace and span ids), and
//! OpenTelemetry traces and metrics over OTLP/HTTP when the standard `OTEL_*` variables
//! ask for them. Off (no exporter, no OpenTelemetry layer) when they are unset.

mod context;
mod json_log;
mod otlp_client;
mod otlp_metrics;
mod request;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::{metrics::SdkMeterProvider, trace::SdkTracerProvider, Resource};
use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt, EnvFilter, Layer};

pub use context::{attempt_span, claim_span, outgoing, record_outcome, RequestTrace};
pub use otlp_metrics::bridge as export_metrics;
pub use request::observe_requests;

/// Spans go to an OpenTelemetry exporter in this process.
static EXPORTING: AtomicBool = AtomicBool::new(false);

pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// An OTLP metrics exporter is installed.
static METERING: AtomicBool = AtomicBool::new(false);

fn metering() -> bool {
    METERING.load(Ordering::Relaxed)
}

/// Spans are made only where something reads them (an exporter, or JSON logs that carry
/// trace ids): with neither, an attempt or a request pays for no span.
static SPANS: AtomicBool = AtomicBool::new(false);

pub fn spans() -> bool {
    SPANS.load(Ordering::Relaxed)
}

/// Flushes what is buffered when the process ends.
pub struct Guard {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The exporters' threads send through this runtime: shut down from a thread
        // that may block.
        let (tracer, meter) = (self.tracer.take(), self.meter.take());
        let flush = move || {
            if let Some(t) = tracer {
                let _ = t.shutdown();
            }
            if let Some(m) = meter {
                let _ = m.shutdown();
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(_) => tokio::task::block_in_place(flush),
            Err(_) => flush(),
        }
    }
}

/// How log lines are written (`POSTHORN_LOG_FORMAT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    pub fn parse(value: Option<&str>) -> Result<LogFormat, String> {
        match value.map(str::trim).unwrap_or("") {
            "" | "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "POSTHORN_LOG_FORMAT: {other:?} is neither \"text\" nor \"json\""
            )),
        }
    }
}

/// Whether `OTEL_*` asks for an exporter of this signal (`traces` or `metrics`): an
/// endpoint is set, the SDK is not disabled and the signal's exporter is not `none`.
pub fn otlp_wanted(env: impl Fn(&str) -> Option<String>, signal: &str) -> bool {
    let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
    let upper = signal.to_ascii_uppercase();
    let endpoint =
        set("OTEL_EXPORTER_OTLP_ENDPOINT") || set(&format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT"));
    let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let exporter = env(&format!("OTEL_{upper}_EXPORTER"));
    let off = exporter.is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    endpoint && !disabled && !off
}

/// Installs the process's logging and, when asked, its OpenTelemetry export. Logs go to
/// stderr (`create-project` prints only its JSON line on stdout); colours only on a
/// terminal.
pub fn init() -> Guard {
    use std::io::IsTerminal;
    let env = |k: &str| std::env::var(k).ok();
    let format = std::env::var("POSTHORN_LOG_FORMAT").ok();
    let (format, bad_format) = match LogFormat::parse(format.as_deref()) {
        Ok(f) => (f, None),
        Err(e) => (LogFormat::Text, Some(e)),
    };
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tower_sessions=warn".into());
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(json_log::Json)
            .boxed(),
    };
    let tracer = otlp_wanted(env, "traces").then(tracer_provider).flatten();
    let meter = otlp_wanted(env, "metrics").then(meter_provider).flatten();
    let otel = tracer.as_ref().map(|p| {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        EXPORTING.store(true, Ordering::Relaxed);
        app::db::group_commit::link_groups_with(context::link);
        // Posthorn's own spans, whatever RUST_LOG keeps of the log: the log filter
        // applies to the log only.
        let ours = tracing_subscriber::filter::Targets::new()
            .with_target("server", tracing::Level::INFO)
            .with_target("app", tracing::Level::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("posthorn"))
            .with_tracked_inactivity(false)
            .with_filter(ours)
    });
    SPANS.store(
        tracer.is_some() || format == LogFormat::Json,
        Ordering::Relaxed,
    );
    if let Some(m) = &meter {
        METERING.store(true, Ordering::Relaxed);
        opentelemetry::global::set_meter_provider(m.clone());
    }
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter))
        .with(otel)
        .init();
    if let Some(e) = bad_format {
        tracing::warn!("{e}: logging as text");
    }
    Guard { tracer, meter }
}

fn resource() -> Resource {
    let b = Resource::builder();
    // OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) wins when set.
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    if named {
        b.build()
    } else {
        b.with_service_name("posthorn").build()
    }
}

fn tracer_provider() -> Option<SdkTracerProvider> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(otlp_client::Client::new()?)
        .build();
    let exporter = built("traces", exporter)?;
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build(),
    )
}

fn meter_provider() -> Option<SdkMeterProvider> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(otlp_client::Client::new()?)
        .build();
    let exporter = built("metrics", exporter)?;
    Some(
        SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(resource())
            .build(),
    )
}

/// An exporter, or None with the reason on stderr (logging is not installed yet).
fn built<T>(
    signal: &str,
    exporter: Result<T, opentelemetry_otlp::ExporterBuildError>,
) -> Option<T> {
    exporter
        .map_err(|e| eprintln!("posthorn: OpenTelemetry {signal} are off: {e}"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn export_is_off_unless_an_endpoint_is_set_and_nothing_turns_it_off() {
        assert!(!otlp_wanted(env(&[]), "traces"));
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
        assert!(otlp_wanted(env(&on), "traces"));
        assert!(otlp_wanted(env(&on), "metrics"));
        let traces_only = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/v1/traces")];
        assert!(otlp_wanted(env(&traces_only), "traces"));
        assert!(!otlp_wanted(env(&traces_only), "metrics"));
        let disabled = [on[0], ("OTEL_SDK_DISABLED", "TRUE")];
        assert!(!otlp_wanted(env(&disabled), "traces"));
        let none = [on[0], ("OTEL_METRICS_EXPORTER", "none")];
        assert!(otlp_wanted(env(&none), "traces"));
        assert!(!otlp_wanted(env(&none), "metrics"));
    }

    #[test]
    fn log_format_is_text_or_json() {
        assert_eq!(LogFormat::parse(None), Ok(LogFormat::Text));
        assert_eq!(LogFormat::parse(Some(" json ")), Ok(LogFormat::Json));
        assert!(LogFormat::parse(Some("yaml")).unwrap_err().contains("yaml"));
    }
}
