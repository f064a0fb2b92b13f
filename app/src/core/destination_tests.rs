use super::*;
use serde_json::json;

#[test]
fn http_is_a_plain_url() {
    assert_eq!(
        parse(&json!({"type": "http", "url": "https://x.example"})),
        Ok(None)
    );
}

#[test]
fn redis_keeps_the_url_without_its_credentials() {
    let d = parse(&json!({"type": "redis", "url": "redis://alice:s%40cret@cache.example/2", "stream": "orders"}))
        .unwrap()
        .unwrap();
    assert_eq!(
        d.settings,
        Settings::Redis {
            url: "redis://cache.example:6379/2".into(),
            stream: "orders".into(),
            maxlen: DEFAULT_MAXLEN
        }
    );
    let creds = d.credentials.unwrap();
    assert_eq!(creds.username.as_deref(), Some("alice"));
    assert_eq!(creds.password.as_deref(), Some("s@cret"));
    assert_eq!(
        d.settings.target(),
        "redis://cache.example:6379/2 stream=orders"
    );
    let a = d.settings.address().unwrap();
    assert_eq!(
        (a.host.as_str(), a.port, a.tls, a.db),
        ("cache.example", 6379, false, 2)
    );
}

#[test]
fn a_password_alone_is_kept_without_a_user() {
    let d = parse(
        &json!({"type": "redis", "url": "redis://:pw@10.0.0.1:7000", "stream": "s", "maxlen": 50}),
    )
    .unwrap()
    .unwrap();
    let c = d.credentials.unwrap();
    assert_eq!((c.username, c.password.as_deref()), (None, Some("pw")));
    assert!(!d.settings.address().unwrap().tls);
    assert!(d.settings.target().starts_with("redis://10.0.0.1:7000 "));
}

#[test]
fn tls_is_refused_until_it_is_available() {
    let e = parse(&json!({"type": "redis", "url": "rediss://h", "stream": "s"})).unwrap_err();
    assert!(e.contains("not available on this server yet"), "{e}");
    let e = parse(&json!({"type": "nats", "url": "tls://h", "subject": "s"})).unwrap_err();
    assert!(e.contains("`tls://` (TLS)"), "{e}");
}

#[test]
fn nats_takes_a_user_or_a_token_not_both() {
    let d = parse(&json!({"type": "nats", "url": "nats://bus.example", "subject": "orders.created", "token": "t"}))
        .unwrap()
        .unwrap();
    assert_eq!(
        d.settings.target(),
        "nats://bus.example:4222 subject=orders.created"
    );
    assert_eq!(d.credentials.unwrap().token.as_deref(), Some("t"));
    let both = parse(
        &json!({"type": "nats", "url": "nats://u:p@bus.example", "subject": "a", "token": "t"}),
    );
    assert!(both.unwrap_err().contains("not both"));
    let none =
        parse(&json!({"type": "nats", "url": "nats://bus.example", "subject": "a"})).unwrap();
    assert_eq!(none.unwrap().credentials, None);
}

#[test]
fn wrong_input_is_refused_in_words() {
    let cases = [
        (json!("redis"), "must be an object"),
        (json!({"url": "redis://x"}), "`destination.type` is missing"),
        (json!({"type": "kafka"}), "unknown"),
        (
            json!({"type": "sqs", "queue_url": "x"}),
            "not available on this server yet",
        ),
        (
            json!({"type": "redis", "stream": "s"}),
            "`destination.url` is required",
        ),
        (
            json!({"type": "redis", "url": "http://x", "stream": "s"}),
            "must start with redis://",
        ),
        (
            json!({"type": "redis", "url": "redis://x?db=1", "stream": "s"}),
            "not a host name",
        ),
        (
            json!({"type": "redis", "url": "redis://x/99999", "stream": "s"}),
            "database",
        ),
        (
            json!({"type": "redis", "url": "redis://x"}),
            "`destination.stream` is required",
        ),
        (
            json!({"type": "redis", "url": "redis://x", "stream": "a b"}),
            "without spaces",
        ),
        (
            json!({"type": "redis", "url": "redis://x", "stream": "s", "maxlen": 0}),
            "maxlen",
        ),
        (
            json!({"type": "redis", "url": "redis://x", "stream": "s", "subject": "s"}),
            "not a setting of `redis`",
        ),
        (
            json!({"type": "nats", "url": "nats://x", "subject": "orders.*"}),
            "wildcards",
        ),
        (
            json!({"type": "nats", "url": "nats://x", "subject": "a..b"}),
            "empty parts",
        ),
        (
            json!({"type": "nats", "url": "nats://x", "subject": "$JS.API.STREAM.DELETE.X"}),
            "server's own",
        ),
        (
            json!({"type": "nats", "url": "nats://x", "subject": "s", "user": 5}),
            "must be a string",
        ),
        (
            json!({"type": "nats", "url": "nats://x", "subject": "s", "password": "a\u{7}"}),
            "control",
        ),
    ];
    for (input, expected) in cases {
        let err = parse(&input).unwrap_err();
        assert!(err.contains(expected), "{input}: {err}");
    }
}

#[test]
fn mqtt_takes_a_topic_without_wildcards_and_qos_0_or_1() {
    let d =
        parse(&json!({"type": "mqtt", "url": "mqtt://u:p@broker.example", "topic": "shop/orders"}))
            .unwrap()
            .unwrap();
    assert_eq!(
        d.settings.target(),
        "mqtt://broker.example:1883 topic=shop/orders qos=1"
    );
    assert_eq!(d.credentials.unwrap().password.as_deref(), Some("p"));
    for (input, expected) in [
        (
            json!({"type": "mqtt", "url": "mqtt://h", "topic": "a/+/b"}),
            "wildcards",
        ),
        (
            json!({"type": "mqtt", "url": "mqtt://h", "topic": "$SYS/x"}),
            "start with `$`",
        ),
        (
            json!({"type": "mqtt", "url": "mqtt://h", "topic": "t", "qos": 2}),
            "0 or 1",
        ),
        (
            json!({"type": "mqtt", "url": "mqtts://h", "topic": "t"}),
            "(TLS)",
        ),
    ] {
        let err = parse(&input).unwrap_err();
        assert!(err.contains(expected), "{input}: {err}");
    }
}

#[test]
fn rabbitmq_reads_its_vhost_from_the_path() {
    let d = parse(&json!({"type": "rabbitmq", "url": "amqp://u:p@mq.example/%2fshop", "exchange": "events", "routing_key": "orders.paid"}))
        .unwrap()
        .unwrap();
    assert_eq!(
        d.settings.target(),
        "amqp://mq.example:5672/%2fshop exchange=\"events\" routing_key=\"orders.paid\""
    );
    assert_eq!(d.settings.address().unwrap().vhost, "/shop");
    let plain = parse(&json!({"type": "rabbitmq", "url": "amqp://mq.example", "routing_key": "q"}))
        .unwrap()
        .unwrap();
    assert_eq!(plain.settings.address().unwrap().vhost, "/");
    assert_eq!(plain.credentials, None);
}

#[test]
fn settings_round_trip_as_kept() {
    let s = Settings::Nats {
        url: "nats://h:4222".into(),
        subject: "a.b".into(),
    };
    let kept = serde_json::to_value(&s).unwrap();
    assert_eq!(
        kept,
        json!({"type": "nats", "url": "nats://h:4222", "subject": "a.b"})
    );
    assert_eq!(serde_json::from_value::<Settings>(kept).unwrap(), s);
}

/// The document's patterns without their look-aheads (the regex crate has none), and
/// without anchors, for generating strings.
fn plain(pattern: &str) -> String {
    let p = pattern.replace("(?![Xx][Nn]--)", "");
    p[1..p.len() - 1].to_string()
}

fn punycode(url: &str) -> bool {
    url.to_ascii_lowercase()
        .split(['/', '.', '@', ':'])
        .any(|l| l.starts_with("xn--"))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1500))]

    /// Every broker URL the document's patterns allow, the server takes.
    #[test]
    fn what_the_url_patterns_allow_is_accepted(
        redis in proptest::string::string_regex(&plain(grammar_redis())).unwrap(),
        nats in proptest::string::string_regex(&plain(crate::core::destination_grammar::NATS_URL)).unwrap(),
        amqp in proptest::string::string_regex(&plain(crate::core::destination_grammar::AMQP_URL)).unwrap(),
    ) {
        proptest::prop_assume!(!punycode(&redis) && !punycode(&nats) && !punycode(&amqp));
        for d in [
            json!({"type": "redis", "url": redis, "stream": "s"}),
            json!({"type": "nats", "url": nats, "subject": "a.b"}),
            json!({"type": "rabbitmq", "url": amqp}),
        ] {
            proptest::prop_assert!(parse(&d).is_ok(), "{d}: {:?}", parse(&d).err());
        }
    }

    /// Every stream name, credential and AMQP name the patterns allow, the server takes.
    #[test]
    fn what_the_name_patterns_allow_is_accepted(
        stream in proptest::string::string_regex(&plain(crate::core::destination_grammar::STREAM)).unwrap(),
        password in proptest::string::string_regex(&plain(crate::core::destination_grammar::CREDENTIAL)).unwrap(),
        key in proptest::string::string_regex(&plain(crate::core::destination_grammar::AMQP_NAME)).unwrap(),
    ) {
        for d in [
            json!({"type": "redis", "url": "redis://h", "stream": stream}),
            json!({"type": "nats", "url": "nats://h", "subject": "a", "password": password}),
            json!({"type": "rabbitmq", "url": "amqp://h", "routing_key": key}),
        ] {
            proptest::prop_assert!(parse(&d).is_ok(), "{d}: {:?}", parse(&d).err());
        }
    }
}

fn grammar_redis() -> &'static str {
    crate::core::destination_grammar::REDIS_URL
}
