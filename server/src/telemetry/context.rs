//! Trace context across the queue: what a request stores with its events, and what
//! each attempt's span joins and sends on to the receiver.

use app::core::{
    status::DeliveryStatus,
    trace_context::{tracestate, TraceParent},
};
use app::db::queue::{Claimed, Outcome};
use axum::http::HeaderMap;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use rand::RngCore;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::exporting;

/// The trace a request belongs to: its position (this request's span when spans are
/// exported, else the caller's) and the caller's `tracestate`.
#[derive(Clone, Debug)]
pub struct RequestTrace {
    pub parent: TraceParent,
    pub state: Option<String>,
}

impl RequestTrace {
    /// Reads `traceparent`/`tracestate` (bounded, checked; a bad one starts a new trace)
    /// and makes `span` their child when spans are exported.
    pub fn of(headers: &HeaderMap, span: &tracing::Span) -> RequestTrace {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let incoming = text("traceparent")
            .filter(|v| v.len() <= 256)
            .and_then(TraceParent::parse);
        let state = incoming.and(text("tracestate")).and_then(tracestate);
        if exporting() {
            if let Some(tp) = incoming {
                let _ = span.set_parent(remote(&tp, state.as_deref()));
            }
            if let Some(own) = position(span) {
                return RequestTrace { parent: own, state };
            }
        }
        RequestTrace {
            parent: incoming.unwrap_or_else(fresh),
            state,
        }
    }
}

/// A new trace that Posthorn starts, marked sampled so a receiver's parent-based
/// sampler keeps its side.
fn fresh() -> TraceParent {
    let mut rng = rand::thread_rng();
    let mut trace_id = [0u8; 16];
    rng.fill_bytes(&mut trace_id);
    trace_id[0] |= 1; // never all zeros
    TraceParent {
        trace_id,
        span_id: span_id(),
        flags: 1,
    }
}

fn span_id() -> [u8; 8] {
    let mut id = [0u8; 8];
    rand::thread_rng().fill_bytes(&mut id);
    id[7] |= 1;
    id
}

fn remote(tp: &TraceParent, state: Option<&str>) -> opentelemetry::Context {
    let state = state
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_bytes(tp.trace_id),
        SpanId::from_bytes(tp.span_id),
        TraceFlags::new(tp.flags),
        true,
        state,
    ))
}

/// Links `span` to the position `traceparent` names (a group commit to each request).
pub fn link(span: &tracing::Span, traceparent: &str) {
    if let Some(tp) = TraceParent::parse(traceparent) {
        let cx = remote(&tp, None);
        span.add_link(cx.span().span_context().clone());
    }
}

/// `span`'s own place in its trace, when it is exported.
fn position(span: &tracing::Span) -> Option<TraceParent> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| TraceParent {
        trace_id: sc.trace_id().to_bytes(),
        span_id: sc.span_id().to_bytes(),
        flags: sc.trace_flags().to_u8(),
    })
}

/// The span of one attempt, in its event's trace (stored with the event, so an attempt
/// hours later in another process joins it). Ids and counts only: never a payload, a
/// secret or a header's value.
pub fn attempt_span(row: &Claimed) -> tracing::Span {
    if !super::spans() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "deliver",
        otel.name = "deliver",
        otel.kind = "client",
        otel.status_code = Empty,
        trace_id = Empty,
        posthorn.project_id = row.of.project_id.get(),
        posthorn.endpoint_id = row.of.endpoint_id.get(),
        posthorn.event_id = %row.of.event_id,
        posthorn.event_type = %row.of.event_type,
        posthorn.request_id = %row.request_id,
        posthorn.attempt = row.attempt,
        posthorn.trigger = row.trigger.as_str(),
        posthorn.outcome = Empty,
        http.response.status_code = Empty,
        error.type = Empty,
        posthorn.duration_ms = Empty,
    );
    let stored = row.traceparent.as_deref().and_then(TraceParent::parse);
    if let Some(tp) = stored {
        if exporting() {
            let _ = span.set_parent(remote(&tp, row.tracestate.as_deref()));
        } else {
            span.record("trace_id", tracing::field::display(tp.trace_id_hex()));
        }
    }
    span
}

/// One claim of the dispatcher's loop (a root span: a claim serves many traces).
pub fn claim_span() -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "claim",
        otel.name = "claim",
        otel.kind = "internal",
        posthorn.claimed = Empty
    )
}

/// What an attempt's span learnt from its outcome.
pub fn record_outcome(span: &tracing::Span, o: &Outcome) {
    let outcome = match o.status {
        DeliveryStatus::Succeeded => "succeeded",
        DeliveryStatus::Failed => "failed",
        _ => "dead_letter",
    };
    span.record("posthorn.outcome", outcome);
    span.record("posthorn.duration_ms", o.duration_ms);
    if let Some(status) = o.response_status {
        span.record("http.response.status_code", status);
    }
    if let Some(kind) = o.error_kind {
        span.record("error.type", kind.as_str());
        span.record("otel.status_code", "ERROR");
    }
}

/// The `traceparent` (and `tracestate`) an attempt sends: the attempt's own span as the
/// parent of what the receiver does, in its event's trace. None when the project keeps
/// its trace context to itself.
pub fn outgoing(row: &Claimed) -> Option<(String, Option<String>)> {
    if !row.trace_propagation {
        return None;
    }
    let stored = row.traceparent.as_deref().and_then(TraceParent::parse);
    let own = exporting()
        .then(|| position(&tracing::Span::current()))
        .flatten();
    let tp = match (own, stored) {
        (Some(own), _) => own,
        (None, Some(tp)) => tp.child(span_id()),
        (None, None) => fresh(),
    };
    Some((tp.to_string(), row.tracestate.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_export_a_request_keeps_its_callers_trace_or_starts_one() {
        let mut h = HeaderMap::new();
        let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        h.insert("traceparent", given.parse().unwrap());
        h.insert("tracestate", "congo=t61rcWkgMzE".parse().unwrap());
        let t = RequestTrace::of(&h, &tracing::Span::none());
        assert_eq!(t.parent.to_string(), given);
        assert_eq!(t.state.as_deref(), Some("congo=t61rcWkgMzE"));

        h.insert("traceparent", "00-zz-00f067aa0ba902b7-01".parse().unwrap());
        let t = RequestTrace::of(&h, &tracing::Span::none());
        assert_ne!(t.parent.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(t.parent.sampled());
        assert_eq!(
            t.state, None,
            "a tracestate without its traceparent is dropped"
        );
    }
}
