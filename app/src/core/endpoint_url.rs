//! Endpoint URLs: absolute http(s), a host, no credentials.

use url::Url;

pub fn parse_endpoint_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|e| format!("url is not a valid URL: {e}"))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!(
            "url must use http or https, not `{}`",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("url must name a host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("url must not carry credentials (user:password@)".into());
    }
    if url.as_str().len() > 2048 {
        return Err("url is longer than 2048 characters".into());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_https_pass() {
        assert!(parse_endpoint_url("https://example.com/hooks").is_ok());
        assert!(parse_endpoint_url("http://127.0.0.1:8080/x?y=1").is_ok());
    }

    #[test]
    fn other_schemes_and_credentials_fail() {
        assert!(parse_endpoint_url("ftp://example.com")
            .unwrap_err()
            .contains("http"));
        assert!(parse_endpoint_url("https://u:p@example.com")
            .unwrap_err()
            .contains("credentials"));
        assert!(parse_endpoint_url("not a url").is_err());
        assert!(parse_endpoint_url("file:///etc/passwd").is_err());
    }
}
