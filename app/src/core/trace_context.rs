//! W3C Trace Context (`traceparent`, `tracestate`): read from an API call, stored with
//! the event, and sent on each attempt so a platform's trace continues into its
//! customer's server. Everything here is checked text: a header that does not parse is
//! ignored (the spec's rule: start a new trace), never stored or forwarded.

/// The longest `tracestate` kept (the spec's own bound for what a vendor must pass on).
pub const MAX_TRACESTATE: usize = 512;
/// At most this many `key=value` members in a `tracestate`.
const MAX_MEMBERS: usize = 32;

/// One position in a trace: the 16-byte trace id, the 8-byte id of the span that is the
/// parent of what comes next, and the flags (bit 0: sampled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    /// A `traceparent` header's value. Version `00` exactly; a later version is read
    /// by its first four fields, as the spec asks. All-zero ids are invalid.
    pub fn parse(header: &str) -> Option<TraceParent> {
        let header = header.trim();
        let mut parts = header.split('-');
        let version = parts.next()?;
        let (trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version.eq_ignore_ascii_case("ff") || !is_lower_hex(version) {
            return None;
        }
        if version == "00" && (parts.next().is_some() || header.len() != 55) {
            return None;
        }
        if trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
            return None;
        }
        if !(is_lower_hex(trace) && is_lower_hex(span) && is_lower_hex(flags)) {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        hex::decode_to_slice(trace, &mut trace_id).ok()?;
        hex::decode_to_slice(span, &mut span_id).ok()?;
        let flags = u8::from_str_radix(flags, 16).ok()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            span_id,
            flags,
        })
    }

    /// The same trace continued under another span (this process's span, or an
    /// attempt's), keeping only the sampled flag.
    pub fn child(&self, span_id: [u8; 8]) -> TraceParent {
        TraceParent {
            span_id,
            flags: self.flags & 1,
            ..*self
        }
    }

    pub fn trace_id_hex(&self) -> String {
        hex::encode(self.trace_id)
    }

    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl std::fmt::Display for TraceParent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            hex::encode(self.trace_id),
            hex::encode(self.span_id),
            self.flags
        )
    }
}

/// A `tracestate` worth passing on: at most [`MAX_TRACESTATE`] characters and
/// [`MAX_MEMBERS`] members, each `key=value` in the spec's characters. Anything else
/// is dropped whole (the spec allows dropping; forwarding junk is not).
pub fn tracestate(header: &str) -> Option<String> {
    let header = header.trim();
    if header.is_empty() || header.len() > MAX_TRACESTATE {
        return None;
    }
    let members: Vec<&str> = header
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .collect();
    if members.is_empty() || members.len() > MAX_MEMBERS {
        return None;
    }
    for m in &members {
        let (key, value) = m.split_once('=')?;
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
        // value: printable ASCII without ',' and '=', not ending in a space.
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && !value.ends_with(' ')
            && value
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        if !(key_ok && value_ok) {
            return None;
        }
    }
    Some(members.join(","))
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_spec_example_round_trips() {
        let tp = TraceParent::parse(GOOD).unwrap();
        assert_eq!(tp.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(tp.sampled());
        assert_eq!(tp.to_string(), GOOD);
        let child = tp.child([1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            child.to_string(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"
        );
    }

    #[test]
    fn malformed_or_zero_ids_start_a_new_trace() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473\0-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-whatever";
        let tp = TraceParent::parse(later).unwrap();
        assert!(!tp.sampled());
        assert!(tp.to_string().starts_with("00-4bf92f"));
    }

    #[test]
    fn tracestate_is_passed_on_only_when_it_is_well_formed_and_small() {
        assert_eq!(
            tracestate(" congo=t61rcWkgMzE , rojo=00f067aa0ba902b7 ").as_deref(),
            Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
        );
        assert_eq!(
            tracestate("vendor@tenant=x").as_deref(),
            Some("vendor@tenant=x")
        );
        for bad in ["", "novalue", "Upper=x", "a=b\nc=d", "a==b", "a=<script>,b"] {
            let out = tracestate(bad);
            assert!(
                out.is_none() || !out.unwrap().contains('\n'),
                "{bad:?} passed on"
            );
        }
        assert_eq!(tracestate("a=b\nc=d"), None);
        assert_eq!(tracestate(&"k=v,".repeat(200)), None);
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        assert_eq!(tracestate(&many.join(",")), None);
    }
}
