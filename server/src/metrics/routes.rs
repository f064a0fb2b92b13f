//! Requests by route: the RED set (rate, errors, duration). Labels are bounded: the
//! route is the router's pattern (`/public/v1/webhooks/{id}`, never a path), the method
//! one of the standard ones, the status a class.

use std::{
    collections::HashMap,
    fmt::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, RwLock,
    },
    time::Duration,
};

use super::histogram::Histogram;

/// More distinct routes than a build has: anything past this is counted as `(other)`.
const MAX_ROUTES: usize = 512;

/// What a request that matched no route is labelled.
pub const UNMATCHED: &str = "(unmatched)";

#[derive(Default)]
struct Stats {
    /// By status class: 1xx … 5xx.
    classes: [AtomicU64; 5],
    duration: Histogram,
}

/// By method, then route pattern: a request finds its counters without allocating.
#[derive(Default)]
pub struct Routes {
    by: RwLock<HashMap<&'static str, HashMap<String, Arc<Stats>>>>,
}

/// The method as a label: the standard ones by name, anything else `_OTHER` (as
/// OpenTelemetry's conventions say), so a client cannot invent label values.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "_OTHER",
    }
}

impl Routes {
    pub fn observe(&self, method: &'static str, route: &str, status: u16, took: Duration) {
        let stats = self.stats(method, route);
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        stats.classes[class].fetch_add(1, Ordering::Relaxed);
        stats.duration.observe(took);
    }

    fn stats(&self, method: &'static str, route: &str) -> Arc<Stats> {
        let by = self.by.read().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = by.get(method).and_then(|routes| routes.get(route)) {
            return s.clone();
        }
        drop(by);
        let mut by = self.by.write().unwrap_or_else(|e| e.into_inner());
        let total: usize = by.values().map(HashMap::len).sum();
        let routes = by.entry(method).or_default();
        let route = if total >= MAX_ROUTES && !routes.contains_key(route) {
            "(other)"
        } else {
            route
        };
        routes.entry(route.to_string()).or_default().clone()
    }

    /// Every (method, route) counted so far, in label order.
    fn sorted(&self) -> Vec<(&'static str, String, Arc<Stats>)> {
        let by = self.by.read().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<_> = by
            .iter()
            .flat_map(|(m, routes)| routes.iter().map(|(r, s)| (*m, r.clone(), s.clone())))
            .collect();
        all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        all
    }

    pub fn render(&self, out: &mut String) {
        let all = self.sorted();
        out.push_str("# HELP posthorn_http_requests_total HTTP requests answered, by route pattern, method and status class.\n# TYPE posthorn_http_requests_total counter\n");
        for (method, route, stats) in &all {
            for (i, c) in stats.classes.iter().enumerate() {
                let n = c.load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "posthorn_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{}xx\"}} {n}",
                        method,
                        escape(route),
                        i + 1
                    );
                }
            }
        }
        out.push_str("# HELP posthorn_http_request_duration_seconds Time to answer an HTTP request (to the response head), by route pattern and method.\n# TYPE posthorn_http_request_duration_seconds histogram\n");
        for (method, route, stats) in &all {
            let labels = format!("method=\"{method}\",route=\"{}\"", escape(route));
            stats
                .duration
                .render(out, "posthorn_http_request_duration_seconds", &labels);
        }
    }
}

/// A label value as Prometheus' text format wants it.
pub fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_counted_by_pattern_and_class_and_bounded() {
        let r = Routes::default();
        r.observe("POST", "/public/v1/events", 202, Duration::from_millis(3));
        r.observe("POST", "/public/v1/events", 429, Duration::from_millis(1));
        r.observe(
            "GET",
            "/public/v1/webhooks/{id}",
            404,
            Duration::from_millis(1),
        );
        let mut out = String::new();
        r.render(&mut out);
        assert!(out.contains(
            "posthorn_http_requests_total{method=\"POST\",route=\"/public/v1/events\",status=\"2xx\"} 1\n"
        ));
        assert!(out.contains(
            "posthorn_http_requests_total{method=\"POST\",route=\"/public/v1/events\",status=\"4xx\"} 1\n"
        ));
        assert!(out.contains(
            "posthorn_http_request_duration_seconds_count{method=\"GET\",route=\"/public/v1/webhooks/{id}\"} 1\n"
        ));
        for i in 0..(MAX_ROUTES + 50) {
            r.observe("GET", &format!("/made/up/{i}"), 200, Duration::ZERO);
        }
        assert!(r.sorted().len() <= MAX_ROUTES + 1);
        assert_eq!(
            method_label(&axum::http::Method::from_bytes(b"BREW").unwrap()),
            "_OTHER"
        );
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
