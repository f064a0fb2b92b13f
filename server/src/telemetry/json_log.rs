//! `POSTHORN_LOG_FORMAT=json`: one JSON object per line, with the trace and span ids of
//! the span the line was written in, so a log search and a trace meet.

use std::fmt;

use serde_json::{Map, Value};
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{
    fmt::{format::Writer, FmtContext, FormatEvent, FormatFields, FormattedFields},
    registry::LookupSpan,
};

use opentelemetry::trace::TraceContextExt;

pub struct Json;

impl<S, N> FormatEvent<S, N> for Json
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut fields = Map::new();
        event.record(&mut Visitor(&mut fields));
        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                .into(),
        );
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        if let Some(message) = fields.remove("message") {
            line.insert("message".into(), message);
        }
        // The spans' own fields, outermost first (JSON text, as `JsonFields` wrote them).
        let mut names = Vec::new();
        let mut span_fields = Map::new();
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                names.push(Value::from(span.name()));
                let ext = span.extensions();
                if let Some(text) = ext.get::<FormattedFields<N>>() {
                    if let Ok(Value::Object(f)) = serde_json::from_str::<Value>(text) {
                        span_fields.extend(f);
                    }
                }
            }
        }
        let (trace_id, span_id) = ids(&span_fields);
        if let Some(t) = trace_id {
            line.insert("trace_id".into(), t.into());
        }
        if let Some(s) = span_id {
            line.insert("span_id".into(), s.into());
        }
        span_fields.remove("trace_id");
        span_fields.extend(fields);
        if !span_fields.is_empty() {
            line.insert("fields".into(), Value::Object(span_fields));
        }
        if !names.is_empty() {
            line.insert("spans".into(), Value::Array(names));
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// The exported span's ids when spans are exported; else the trace id a span recorded
/// (an attempt records its event's).
fn ids(span_fields: &Map<String, Value>) -> (Option<String>, Option<String>) {
    if super::exporting() {
        let cx = tracing::Span::current().context();
        let sc = cx.span().span_context().clone();
        if sc.is_valid() {
            return (
                Some(sc.trace_id().to_string()),
                Some(sc.span_id().to_string()),
            );
        }
    }
    let recorded = span_fields
        .get("trace_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    (recorded, None)
}

struct Visitor<'a>(&'a mut Map<String, Value>);

impl tracing::field::Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
}
