//! A caller of the public API with one project's key, answering status, headers and body.

use reqwest::{Client, StatusCode};
use serde_json::Value;

use super::TestApp;

pub struct Api {
    pub http: Client,
    pub base: String,
    pub key: String,
}

impl Api {
    pub fn new(app: &TestApp, key: &str) -> Api {
        Api {
            http: Client::new(),
            base: format!("{}/public/v1", app.base),
            key: key.to_string(),
        }
    }
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let (status, headers) = (res.status(), res.headers().clone());
        let text = res.text().await.unwrap();
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }
}
