"""The operator client against a real `posthorn serve` (started by sdk/test.sh)."""

import dataclasses
import datetime as dt
import typing
import uuid

import pytest
from posthorn import (
    ApiError,
    AttemptCounts,
    Brand,
    Client,
    CreatedKey,
    EffectiveLimits,
    Operator,
    PortalLink,
    Project,
    Usage,
    UsageDay,
)


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def utc_today():
    return dt.datetime.now(dt.timezone.utc).date()


def raises(status, code, call, *args, **kwargs):
    with pytest.raises(ApiError) as e:
        call(*args, **kwargs)
    assert (e.value.status, e.value.code) == (status, code), e.value
    return e.value


def test_a_project_from_creation_to_deletion(base_url, operator_key):
    op = Operator(operator_key, base_url)
    uid = unique("py-customer")
    project = op.projects.create(
        "Python customer", uid=uid, plan="business",
        limits={"endpoints": 5, "concurrent_erasures": 2},
        frame_ancestors=["https://app.example.com"], brand={"name": "Acme", "accent": "#4f46e5"},
    )
    assert (project.uid, project.name, project.plan) == (uid, "Python customer", "business")
    assert isinstance(project.limits, EffectiveLimits) and project.limits.endpoints == 5
    assert project.limits.concurrent_erasures == 2
    assert project.frame_ancestors == ["https://app.example.com"]
    assert project.brand == Brand(name="Acme", accent="#4f46e5", logo_url=None)
    assert project.created_at.tzinfo is not None

    # Found by the operator's own id; an unknown one finds nothing.
    assert op.projects.find(uid) == project
    assert op.projects.get(project.id) == project
    assert op.projects.find(unique("py-nobody")) is None

    # Updated: only the fields given change; brand and frame_ancestors are replaced whole.
    changed = op.projects.update(
        project.id, name="Python customer, renamed",
        frame_ancestors=["https://portal.example.com", "http://localhost:8080"],
        brand={"accent": "#112233", "logo_url": "https://cdn.example.com/logo.png"},
    )
    assert changed.name == "Python customer, renamed"
    assert changed.frame_ancestors == ["https://portal.example.com", "http://localhost:8080"]
    assert changed.brand == Brand(None, "#112233", "https://cdn.example.com/logo.png")
    assert (changed.uid, changed.plan, changed.limits) == (uid, "business", project.limits)
    assert op.projects.get(project.id) == changed

    # A second project with the same uid conflicts; a wildcard is not an origin.
    raises(409, "conflict", op.projects.create, "Python duplicate", uid=uid)
    err = raises(422, "invalid", op.projects.update, project.id,
                 frame_ancestors=["https://*.example.com"])
    assert "frame_ancestors" in err.message
    raises(422, "invalid", op.projects.create, unique("py-bad"),
           frame_ancestors=["https://*.example.com"])
    assert op.projects.get(project.id) == changed

    # A key minted for the project opens the public API, until it is revoked.
    today = utc_today()
    key = op.api_keys.create(project.id, "python production")
    assert isinstance(key, CreatedKey) and key.name == "python production"
    assert key.key.startswith(key.prefix) and key.key.startswith("phk_")
    public = Client(key.key, base_url)
    hook = public.webhooks.create("https://example.com/operator-py", ["order.paid"])
    sent = public.events.send("order.paid", {"order": 1})
    assert sent.deliveries == 1
    assert [w.id for w in public.webhooks.list()] == [hook.id]
    op.api_keys.revoke(project.id, key.id)
    raises(401, "unauthorized", public.events.send, "order.paid", {"order": 2})
    op.api_keys.revoke(project.id, key.id)  # a repeat (as after a lost answer) is harmless
    raises(404, "not_found", op.api_keys.revoke, project.id, key.id + 10**9)

    # Usage counts the event on its UTC day.
    usage = op.usage.get(project.id, since=today, until=utc_today())
    assert (usage.project_id, usage.since, usage.until) == (project.id, today, utc_today())
    assert usage.events == 1 and isinstance(usage.attempts, AttemptCounts)
    assert [(d.day, d.events) for d in usage.days] == [(today, 1)]
    by_text = op.usage.get(project.id, since=today.isoformat(), until=utc_today().isoformat())
    # The same window read by text; its attempts may have grown meanwhile (the endpoint's
    # host cannot be reached from here, and its retries go on), its events not.
    assert (by_text.project_id, by_text.since, by_text.until, by_text.events) == (
        usage.project_id, usage.since, usage.until, usage.events)
    assert [(d.day, d.events) for d in by_text.days] == [(today, 1)]
    raises(422, "invalid", op.usage.get, project.id, since="yesterday")

    # A portal link, single-use, expiring when asked.
    before = dt.datetime.now(dt.timezone.utc)
    link = op.portal_links.create(project.id, "user-7", "member", email="ana@example.com",
                                  name="Ana", expires_in=600)
    assert link.url.startswith(base_url + "/portal/")
    assert before + dt.timedelta(seconds=590) <= link.expires_at <= before + dt.timedelta(seconds=610)
    viewer = op.portal_links.create(project.id, "user-8", "viewer")
    assert "/portal/" in viewer.url and viewer.url != link.url
    raises(422, "invalid", op.portal_links.create, project.id, "user-9", "admin")

    # Deleted: gone at once, and so is everything under it.
    op.projects.delete(project.id)
    raises(404, "not_found", op.projects.get, project.id)
    raises(404, "not_found", op.projects.delete, project.id)
    raises(404, "not_found", op.usage.get, project.id)
    assert op.projects.find(uid) is None


def test_the_list_pages_through_every_project_once(base_url, operator_key):
    op = Operator(operator_key, base_url)
    created = [op.projects.create(unique("py-page")) for _ in range(3)]
    try:
        first = op.projects.list(limit=2)
        assert len(first.data) == 2 and first.has_more and first.next_cursor
        second = op.projects.list(limit=2, cursor=first.next_cursor)
        assert not {p.id for p in first.data} & {p.id for p in second.data}

        it = op.projects.iter(page_size=2)
        ids = [p.id for p in it]
        assert len(ids) == len(set(ids))
        assert {p.id for p in created} <= set(ids)
        assert [p.id for p in created] == [i for i in ids if i in {p.id for p in created}]
        assert it.cursor  # resumes after the last one read
        assert all(p.id not in {c.id for c in created}
                   for p in op.projects.iter(cursor=it.cursor, page_size=2))
        raises(422, "invalid", op.projects.list, limit=0)
    finally:
        for p in created:
            op.projects.delete(p.id)


def test_a_wrong_operator_key_is_refused(base_url, business_key):
    for key in ("pho_" + "x" * 43, business_key):  # a project's API key is not one either
        raises(401, "unauthorized", Operator(key, base_url).projects.list)


# Models and their schemas in /operator/v1/openapi.json.
MODELS = {
    "Project": Project,
    "EffectiveLimits": EffectiveLimits,
    "BrandOut": Brand,
    "CreatedKey": CreatedKey,
    "Usage": Usage,
    "UsageDay": UsageDay,
    "AttemptCounts": AttemptCounts,
    "PortalLink": PortalLink,
}


def resolve(doc, schema):
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].split("/")[-1]]
    return schema


def json_types(doc, prop):
    prop = resolve(doc, prop)
    types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    fmt = prop.get("format")
    return {fmt if t == "string" and fmt in ("date", "date-time") else t for t in types}


def hint_types(hint):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return set().union(*(hint_types(a) for a in args))
    if dataclasses.is_dataclass(hint):
        return {"object"}
    return {
        type(None): {"null"}, int: {"integer"}, str: {"string"}, bool: {"boolean"},
        dt.datetime: {"date-time"}, dt.date: {"date"}, list: {"array"},
    }[origin or hint]


def test_the_operator_models_match_the_openapi_document(operator_openapi):
    doc = operator_openapi
    for name, cls in MODELS.items():
        schema = resolve(doc, {"$ref": f"#/components/schemas/{name}"})
        props, required = schema["properties"], set(schema.get("required", []))
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(fields) == set(props), name
        for field, prop in props.items():
            expected = json_types(doc, prop)
            if field not in required:  # an absent field reads as None
                expected |= {"null"}
                assert fields[field].default is None, f"{name}.{field} may be absent"
            assert hint_types(hints[field]) == expected, f"{name}.{field}"
            if "$ref" in prop:  # a nested model is the one named by the schema
                assert MODELS[prop["$ref"].split("/")[-1]] is hints[field], f"{name}.{field}"
    # Page(data, has_more, next_cursor) is the envelope {data, next_cursor, has_more}.
    listing = doc["paths"]["/projects"]["get"]["responses"]["200"]["content"]["application/json"]
    props = set()
    for part in resolve(doc, listing["schema"])["allOf"]:
        props |= set(resolve(doc, part)["properties"])
    assert props == {"data", "next_cursor", "has_more"}
    # Every operation of the document is one the client calls.
    ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item if m != "parameters"}
    assert ops == {
        ("POST", "/projects"), ("GET", "/projects"), ("GET", "/projects/{id}"),
        ("PATCH", "/projects/{id}"), ("DELETE", "/projects/{id}"),
        ("POST", "/projects/{id}/api-keys"), ("DELETE", "/projects/{id}/api-keys/{key_id}"),
        ("GET", "/projects/{id}/usage"), ("POST", "/projects/{id}/portal-links"),
    }
