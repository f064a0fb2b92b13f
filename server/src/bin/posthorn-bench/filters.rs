//! In process: what filters cost at fan-out, without the server around them: one event's
//! verdicts for `endpoints` endpoints with the same filter (the payload converted once,
//! as fan-out does), timed over many events.

use std::time::Instant;

use app::core::filter;

pub fn eval(endpoints: usize, events: usize, source: &str) {
    let f = filter::compile(source).unwrap_or_else(|e| panic!("{e}"));
    let filters: Vec<Option<&filter::Filter>> = (0..endpoints).map(|_| Some(&f)).collect();
    let mut matched = 0usize;
    let mut per_event = Vec::with_capacity(events);
    for i in 0..events {
        let data = format!(r#"{{"order":{i},"amount":4200,"currency":"EUR"}}"#);
        let started = Instant::now();
        let input = filter::Input::parse("order.paid", &data, &[]);
        matched += filter::verdicts(&input, &filters)
            .iter()
            .filter(|v| v.matched())
            .count();
        per_event.push(started.elapsed().as_secs_f64() * 1e6);
    }
    per_event.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = per_event[per_event.len() / 2];
    println!(
        "in process: {endpoints} endpoints with filter {source:?}, {events} events: median {median:.1} µs per event \
         ({:.2} µs per endpoint), p99 {:.1} µs; {matched} verdicts matched",
        median / endpoints as f64,
        per_event[per_event.len() * 99 / 100],
    );
}
