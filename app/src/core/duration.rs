//! Human durations as the configuration spells them: `500ms`, `30s`, `5m`, `2h`, `7d`.

use std::time::Duration;

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("`{text}` has no unit (use ms, s, m, h or d)"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` does not start with a number"))?;
    let millis = match unit {
        "ms" => n,
        "s" => n * 1_000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        "d" => n * 86_400_000,
        _ => {
            return Err(format!(
                "`{text}` has unknown unit `{unit}` (use ms, s, m, h or d)"
            ))
        }
    };
    Ok(Duration::from_millis(millis))
}

pub fn parse_schedule(text: &str) -> Result<Vec<Duration>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    text.split(',').map(parse_duration).collect()
}

/// Short form for the dashboard: `850 ms`, `12.3 s`, `4 min`.
pub fn format_millis(ms: i64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 60_000 => format!("{} s", tenths(ms, 1000)),
        ms if ms < 3_600_000 => format!("{} min", ms / 60_000),
        ms => format!("{} h", tenths(ms, 3_600_000)),
    }
}

/// `numer / denom` with one decimal, rounded half up (`denom` > 0, `numer` ≥ 0). Integer
/// arithmetic keeps float formatting (several KB of WASM) out of the browser bundle.
pub fn tenths(numer: i64, denom: i64) -> String {
    let t = (numer.max(0) * 10 + denom / 2) / denom.max(1);
    format!("{}.{}", t / 10, t % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_round_to_a_tenth() {
        assert_eq!(format_millis(850), "850 ms");
        assert_eq!(format_millis(12_340), "12.3 s");
        assert_eq!(format_millis(12_350), "12.4 s");
        assert_eq!(format_millis(59_999), "60.0 s");
        assert_eq!(format_millis(240_000), "4 min");
        assert_eq!(format_millis(5_400_000), "1.5 h");
        assert_eq!(tenths(2, 3), "0.7");
        assert_eq!(tenths(100, 1), "100.0");
    }

    #[test]
    fn every_unit_parses() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("5w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn the_default_schedule_parses() {
        let s = parse_schedule("30s,5m,30m,2h,6h").unwrap();
        assert_eq!(s.len(), 5);
        assert_eq!(s[4], Duration::from_secs(6 * 3600));
    }
}
