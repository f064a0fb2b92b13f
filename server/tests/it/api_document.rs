//! The API documents state what the server checks, from the same sources: ids that cannot
//! exist are refused before any query, no PostgreSQL text reaches a client, and the
//! patterns (event types, event ids, PEM blocks) and enums are the domain's own.

use crate::common;

use app::core::{
    client_cert::{CERT_PATTERN, KEY_PATTERN, MAX_PEM_CHARS},
    event_type,
    status::{DeliveryStatus, ErrorKind, Trigger},
};
use common::{api_calls::Api, TestApp};
use serde_json::{json, Value};
use server::api::{paging::EVENT_ID_PATTERN, ApiError};

/// PostgreSQL's words for a NUL it cannot store, which no answer may carry.
fn carries_postgres_text(body: &Value) -> bool {
    let text = body.to_string();
    ["UTF8", "0x00", "invalid byte sequence", "SQLSTATE"]
        .iter()
        .any(|w| text.contains(w))
}

/// The `/{api}/v1/openapi.json` document.
async fn document(app: &TestApp, api: &str) -> Value {
    let url = format!("{}/{api}/v1/openapi.json", app.base);
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

async fn operator_call(app: &TestApp, key: &str, path: &str) -> (u16, Value) {
    let r = reqwest::Client::new()
        .get(format!("{}/operator/v1{path}", app.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn ids_that_cannot_exist_are_refused_before_any_query() {
    let app = TestApp::spawn().await;
    let (_, key) = app.project("business").await;
    let api = Api::new(&app, &key);
    let unknown = "evt_01JD8X0000000000000000AB";
    let (s, _, v) = api
        .send("GET", &format!("/deliveries?event_id={unknown}"), None)
        .await;
    assert_eq!(
        (s.as_u16(), v["data"].as_array().map(Vec::len)),
        (200, Some(0))
    );
    for bad in [
        "%00",
        "evt_01JD8X0000000000000000A%00",
        "evt_nope",
        "evt_01jd8x0000000000000000ab",
    ] {
        let (s, _, v) = api
            .send("GET", &format!("/deliveries?event_id={bad}"), None)
            .await;
        assert_eq!(
            (s.as_u16(), v["error"]["code"].as_str()),
            (422, Some("invalid")),
            "{bad}: {v}"
        );
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("event_id: an event id is `evt_`"),
            "{message}"
        );
        assert!(!carries_postgres_text(&v), "{v}");
    }
    // An event id of another shape cannot exist: 404 before any query.
    for path in [
        "/events/evt_nope",
        "/events/x/data",
        &format!("/events/{unknown}"),
    ] {
        let method = if path.ends_with("/data") {
            "DELETE"
        } else {
            "GET"
        };
        let (s, _, v) = api.send(method, path, None).await;
        assert_eq!(s, 404, "{method} {path}: {v}");
    }
    // A NUL in a path id names nothing, whichever the route.
    for (method, path) in [
        ("GET", "/events/evt_%00"),
        ("DELETE", "/events/%00/data"),
        ("GET", "/erasures/1%00"),
        ("GET", "/event-types/a.b%00/schema"),
        ("GET", "/webhooks/%00"),
    ] {
        let (s, _, v) = api.send(method, path, None).await;
        assert_eq!(s, 404, "{method} {path}: {v}");
        assert!(!carries_postgres_text(&v), "{v}");
    }
    let operator = app::db::operator_keys::create(&app.pool, "document")
        .await
        .unwrap();
    let (s, v) = operator_call(&app, &operator, "/projects/%00/usage").await;
    assert_eq!(s, 404, "{v}");
    // The key is still checked first.
    let (s, _) = operator_call(&app, "pho_forged", "/projects/%00").await;
    assert_eq!(s, 401);
    app.stop().await;
}

#[tokio::test]
async fn a_value_postgresql_refuses_is_answered_in_our_words() {
    let app = TestApp::spawn().await;
    let refused = sqlx::query("SELECT $1::text")
        .bind("a\0b")
        .execute(&app.pool)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("0x00"), "{refused}");
    let e = ApiError::from(app::error::AppError::from(refused));
    assert_eq!((e.status.as_u16(), e.code), (422, "invalid"));
    assert!(!carries_postgres_text(&json!(e.message)), "{}", e.message);
    // A certificate text with a NUL after its block is refused by the check, not stored.
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["nul.example".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap().pem();
    let (_, api_key) = app.project("business").await;
    let (s, _, v) = Api::new(&app, &api_key)
        .send(
            "POST",
            "/webhooks",
            Some(json!({"url": "https://example.com/h", "events": ["*"],
                "client_certificate": {"cert": format!("{cert}\u{0}"), "key": key.serialize_pem()}})),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("client_certificate.cert"),
        "{v}"
    );
    assert!(!carries_postgres_text(&v), "{v}");
    app.stop().await;
}

#[tokio::test]
async fn the_document_states_the_domains_patterns_and_enums() {
    let app = TestApp::spawn().await;
    let doc = document(&app, "public").await;
    let schemas = &doc["components"]["schemas"];
    let pem = &schemas["ClientCertificateIn"]["properties"];
    assert_eq!(pem["cert"]["pattern"], json!(CERT_PATTERN));
    assert_eq!(pem["key"]["pattern"], json!(KEY_PATTERN));
    assert_eq!(pem["cert"]["maxLength"], json!(MAX_PEM_CHARS));
    let params = doc["paths"]["/deliveries"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let event_id = params.iter().find(|p| p["name"] == "event_id").unwrap();
    assert_eq!(event_id["schema"]["pattern"], json!(EVENT_ID_PATTERN));
    assert_eq!(event_id["required"], json!(false));
    let event_path = &doc["paths"]["/events/{id}"]["get"]["parameters"][0];
    assert_eq!(event_path["schema"]["pattern"], json!(EVENT_ID_PATTERN));
    let type_path = &doc["paths"]["/event-types/{type}/schema"]["put"]["parameters"][0];
    assert_eq!(type_path["schema"]["pattern"], json!(event_type::PATTERN));
    let event = &schemas["CreateEvent"]["properties"]["event"];
    assert_eq!(event["pattern"], json!(event_type::PATTERN));
    let delivery = &schemas["Delivery"]["properties"];
    assert_eq!(
        delivery["event_type"]["pattern"],
        json!(event_type::PATTERN)
    );
    assert_eq!(
        delivery["event_type"]["maxLength"],
        json!(event_type::MAX_LEN)
    );
    // A blank filter is refused, so the document asks for something not blank.
    // A new endpoint's fields, and the rule that it has `url` or `destination`.
    let create = &schemas["CreateWebhook"]["allOf"][0]["properties"];
    let filter = &create["filter"];
    assert_eq!(filter["pattern"], json!(r"\S"));
    let blank = json!({"url": "https://example.com/h", "events": ["*"], "filter": " "});
    let (_, key) = app.project("business").await;
    let (s, _, v) = Api::new(&app, &key)
        .send("POST", "/webhooks", Some(blank))
        .await;
    assert_eq!(s, 422, "{v}");
    let items = &create["events"]["items"];
    let kinds = create["destination"]["oneOf"].as_array().unwrap();
    let of = |kind: &str| {
        kinds
            .iter()
            .find(|k| k["properties"]["type"]["enum"] == json!([kind]))
            .unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
    };
    use app::core::destination_grammar as grammar;
    assert_eq!(
        of("redis")["properties"]["url"]["pattern"],
        json!(grammar::REDIS_URL)
    );
    assert_eq!(
        of("nats")["properties"]["subject"]["pattern"],
        json!(grammar::SUBJECT)
    );
    assert_eq!(
        of("mqtt")["properties"]["topic"]["pattern"],
        json!(grammar::TOPIC)
    );
    assert_eq!(
        of("rabbitmq")["properties"]["url"]["pattern"],
        json!(grammar::AMQP_URL)
    );
    assert_eq!(of("redis")["additionalProperties"], json!(false));
    assert_eq!(
        schemas["CreateWebhook"]["allOf"][1]["oneOf"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "url or destination"
    );
    assert_eq!(items["pattern"], json!(event_type::SUBSCRIPTION_PATTERN));
    // The enums are the domain's: every value it stores, under the document's names.
    let named = |name: &str, values: Vec<&str>| {
        assert_eq!(schemas[name]["enum"], json!(values), "{name}");
    };
    named(
        "DeliveryStatus",
        DeliveryStatus::ALL.map(DeliveryStatus::as_str).to_vec(),
    );
    named(
        "DeliveryTrigger",
        Trigger::ALL.map(Trigger::as_str).to_vec(),
    );
    named(
        "DeliveryErrorKind",
        ErrorKind::ALL.map(ErrorKind::as_str).to_vec(),
    );
    assert_eq!(
        delivery["trigger"]["$ref"],
        json!("#/components/schemas/DeliveryTrigger")
    );
    // The error body the documents describe is the one sent.
    let (_, _, v) = Api::new(&app, "phk_wrong")
        .send("GET", "/webhooks", None)
        .await;
    let detail = &schemas["ApiErrorDetail"]["required"];
    assert_eq!(detail, &json!(["code", "message"]));
    assert!(
        v["error"]["code"].is_string() && v["error"]["message"].is_string(),
        "{v}"
    );
    app.stop().await;
}

#[tokio::test]
async fn the_operators_limits_object_is_the_limits_table() {
    let app = TestApp::spawn().await;
    let doc = document(&app, "operator").await;
    let documented = &doc["components"]["schemas"]["LimitOverrides"]["properties"];
    for (name, ceiling, _) in app::core::operator::overrides() {
        assert_eq!(documented[name]["maximum"], json!(ceiling), "{name}");
    }
    let key = app::db::operator_keys::create(&app.pool, "limits")
        .await
        .unwrap();
    let create = |limits: Value| {
        reqwest::Client::new()
            .post(format!("{}/operator/v1/projects", app.base))
            .bearer_auth(&key)
            .json(&json!({"name": "Shop", "limits": limits}))
            .send()
    };
    let r = create(json!({"endpoints": 7.0, "retention_days": 2}))
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let p: Value = r.json().await.unwrap();
    assert_eq!(
        (
            p["limits"]["endpoints"].as_i64(),
            p["limits"]["retention_days"].as_i64()
        ),
        (Some(7), Some(2))
    );
    for (limits, says) in [
        (json!({"nope": 1}), "unknown field `nope`"),
        (
            json!({"data_depth": 257}),
            "limits.data_depth: a whole number from 1 to 256",
        ),
        (json!({"members": 1.5}), "not a whole number"),
    ] {
        let r = create(limits.clone()).await.unwrap();
        assert_eq!(r.status(), 422, "{limits}");
        let v: Value = r.json().await.unwrap();
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{limits}: {v}"
        );
    }
    app.stop().await;
}
