package posthorn

import (
	"reflect"
	"strings"
	"testing"
)

func TestAnUnnamedListenOpenIsNotRetriedAfter5xxButANamedOneIs(t *testing.T) {
	session := map[string]any{"endpoint": hookJSON, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"connect_path": "/public/v1/listen/1/connect", "reattached": true}
	s, client := newScripted(t, fail(503), answer{201, nil, session})
	_, err := client.Listen.Open(ctx, ListenOpen{Forward: "http://localhost:8000/webhooks"})
	wantAPIError(t, err, 503, "internal")
	want := map[string]any{"forward": "http://localhost:8000/webhooks"} // nothing else unless given
	if len(s.seen) != 1 || s.calls()[0] != "POST /public/v1/listen" || !reflect.DeepEqual(s.seen[0].body, want) {
		t.Fatalf("%+v", s.seen)
	}
	s.then(fail(503), answer{200, nil, session})
	got, err := client.Listen.Open(ctx, ListenOpen{Forward: "http://localhost:8000/webhooks",
		Events: []string{"order.paid"}, Name: "laptop", Filter: "data.amount > 1000"})
	ok(t, err)
	if !got.Reattached || got.Endpoint.ID != 1 || len(s.seen) != 2 {
		t.Fatalf("%+v after %d requests", got, len(s.seen))
	}
	want = map[string]any{"forward": "http://localhost:8000/webhooks", "events": []any{"order.paid"},
		"name": "laptop", "filter": "data.amount > 1000"}
	if !reflect.DeepEqual(s.seen[1].body, want) {
		t.Fatal(s.seen[1].body)
	}
}

func TestAListenSessionOpensAndItsNameReattachesToIt(t *testing.T) {
	var statuses []int
	client := NewClient(env(t, "POSTHORN_TEST_KEY_BUSINESS"), WithBaseURL(env(t, "POSTHORN_TEST_URL")),
		WithOnResponse(func(a Attempt) {
			if a.Path == "/listen" {
				statuses = append(statuses, a.Status)
			}
		}))
	open := ListenOpen{Forward: "http://127.0.0.1:9/x", Name: unique("go-listen")}
	first, err := client.Listen.Open(ctx, open)
	ok(t, err)
	defer client.Webhooks.Delete(ctx, first.Endpoint.ID)
	d := first.Endpoint.Destination
	if first.Reattached || !strings.HasPrefix(first.Secret, "whsec_") || first.ConnectPath == "" ||
		first.Endpoint.URL != open.Forward || d == nil || d.Type != "listen" || d.Name == nil || *d.Name != open.Name {
		t.Fatalf("%+v, destination %+v", first, d)
	}

	again, err := client.Listen.Open(ctx, open)
	ok(t, err)
	if !again.Reattached || again.Endpoint.ID != first.Endpoint.ID || again.Secret != first.Secret {
		t.Fatalf("%+v, first %+v", again, first)
	}
	if !reflect.DeepEqual(statuses, []int{201, 200}) {
		t.Fatalf("answered %v", statuses)
	}

	// Deleting its endpoint ends the session.
	ok(t, client.Webhooks.Delete(ctx, first.Endpoint.ID))
	_, err = client.Webhooks.Get(ctx, first.Endpoint.ID)
	wantAPIError(t, err, 404, "not_found")
}
