//! Times on the wire between the server and the browser, read without chrono's general
//! parser: the server writes RFC 3339 in UTC (`2026-12-05T10:00:00.123456Z`), and a
//! parser for exactly that keeps chrono's format machinery out of the browser bundle.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{de::Error, Deserialize, Deserializer};

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)` as a UTC time; other offsets are refused.
pub fn parse_utc(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b' ') {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> { s.get(from..to)?.parse().ok() };
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let rest = &s[19..];
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            (&r[..n], &r[n..])
        }
        None => ("", rest),
    };
    if !matches!(zone, "Z" | "z" | "+00:00") || frac.len() > 9 {
        return None;
    }
    let nanos = if frac.is_empty() {
        0
    } else {
        frac.parse::<u32>().ok()? * 10u32.pow(9 - frac.len() as u32)
    };
    let t = NaiveDate::from_ymd_opt(y as i32, mo, d)?.and_hms_nano_opt(h, mi, sec, nanos)?;
    Some(t.and_utc())
}

pub fn utc<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
    parse_utc(&s).ok_or_else(|| D::Error::custom(format!("not a UTC time: {s}")))
}

pub fn utc_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    match <Option<std::borrow::Cow<'de, str>>>::deserialize(d)? {
        None => Ok(None),
        Some(s) => parse_utc(&s)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("not a UTC time: {s}"))),
    }
}

pub fn utc_and_id_opt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<(DateTime<Utc>, i64)>, D::Error> {
    match <Option<(std::borrow::Cow<'de, str>, i64)>>::deserialize(d)? {
        None => Ok(None),
        Some((s, id)) => parse_utc(&s)
            .map(|t| Some((t, id)))
            .ok_or_else(|| D::Error::custom(format!("not a UTC time: {s}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_chrono_writes() {
        for t in [
            "2026-12-05T10:00:00Z",
            "2026-12-05T10:00:00.123Z",
            "2026-12-05T10:00:00.123456Z",
            "2026-02-28T23:59:59.999999999Z",
        ] {
            let want: DateTime<Utc> = DateTime::parse_from_rfc3339(t).unwrap().into();
            assert_eq!(parse_utc(t), Some(want), "{t}");
            let round = want.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
            assert_eq!(parse_utc(&round), Some(want));
        }
        let now = Utc::now();
        let json = serde_json::to_string(&now).unwrap();
        assert_eq!(parse_utc(json.trim_matches('"')), Some(now));
        assert!(parse_utc("2026-12-05T10:00:00+00:00").is_some());
    }

    #[test]
    fn refuses_anything_else() {
        for t in [
            "",
            "2026-12-05",
            "2026-12-05T10:00:00+01:00",
            "2026-13-05T10:00:00Z",
            "2026-12-05T25:00:00Z",
            "2026-12-05T10:00:00.Z0",
            "2026-12-05T10:00:00.1234567890Z",
            "２０２６-12-05T10:00:00Z",
        ] {
            assert_eq!(parse_utc(t), None, "{t}");
        }
    }
}
