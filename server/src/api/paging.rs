//! Reading list parameters (`limit`, `cursor`, `since`, ids) and cutting pages, shared by
//! every list of the API.

use app::core::cursor::Cursor;
use serde::Serialize;

use super::ApiError;

/// Where a list stops: resume from `next_cursor`; fetch again now only if `has_more`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct PageMeta {
    /// Comes with every page, the last one included, so a poller can resume from it later.
    #[schema(pattern = r"^[0-9]{1,16}_[0-9]{1,18}$")]
    pub next_cursor: String,
    pub has_more: bool,
}

impl PageMeta {
    pub fn new(next: Option<Cursor>, has_more: bool) -> PageMeta {
        let next = next.unwrap_or(Cursor {
            created_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            id: 0,
        });
        PageMeta {
            next_cursor: next.encode(),
            has_more,
        }
    }
}

/// Trims a page fetched with `limit + 1` rows to `limit`; returns the cursor to resume
/// from (the last row's, or the one the page started after) and whether more are waiting.
pub fn cut_page<T>(
    rows: &mut Vec<T>,
    limit: i64,
    after: Option<Cursor>,
    key: impl Fn(&T) -> Cursor,
) -> (Option<Cursor>, bool) {
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    (rows.last().map(key).or(after), has_more)
}

/// Ids that are not numbers are simply unknown.
pub fn parse_id(id: &str) -> Result<i64, ApiError> {
    id.parse()
        .map_err(|_| app::error::AppError::NotFound.into())
}

/// `limit` query values: 1..=200, default 50.
pub fn page_limit(limit: Option<i64>) -> Result<i64, ApiError> {
    match limit {
        None => Ok(50),
        Some(n) if (1..=200).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::invalid(format!(
            "limit must be between 1 and 200, not {n}"
        ))),
    }
}

pub fn parse_cursor(c: Option<&str>) -> Result<Option<app::core::cursor::Cursor>, ApiError> {
    c.map(|c| app::core::cursor::Cursor::decode(c).map_err(ApiError::invalid))
        .transpose()
}

/// An empty `since=` is a mistake (the document says date-time), not "no filter".
pub fn parse_since(s: Option<&str>) -> Result<Option<chrono::DateTime<chrono::Utc>>, ApiError> {
    s.map(|s| {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|_| ApiError::invalid(format!("since must be an RFC 3339 time, not `{s}`")))
    })
    .transpose()
}
