package posthorn

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Against a real `posthorn serve` on a fresh database, started by sdk/test.sh.

// succeeded waits for an attempt of the event that succeeded and returns it.
func succeeded(t *testing.T, client *Client, eventID string) Delivery {
	t.Helper()
	var found Delivery
	waitFor(t, "an attempt of "+eventID+" to succeed", 30*time.Second, func() bool {
		all, err := client.Deliveries.Iter(ctx, DeliveryListParams{EventID: eventID}).All()
		ok(t, err)
		for _, d := range all {
			if d.Status == "succeeded" {
				found = d
				return true
			}
		}
		return false
	})
	return found
}

func TestADeliveryReachesTheReadmeReceiverAndVerifies(t *testing.T) {
	client := businessClient(t)
	r := &receiver{port: freePort(t)}
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{
		URL: r.url("/webhooks"), Events: []string{"order.paid"}, Description: "go receiver"})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	if hook.Secret == nil || !strings.HasPrefix(*hook.Secret, "whsec_") {
		t.Fatalf("no secret: %+v", hook)
	}
	r = startReceiver(t, r.port, *hook.Secret)

	sent, err := client.Events.Send(ctx, "order.paid", map[string]any{"order": 42, "note": "ünïcode"}, nil)
	ok(t, err)
	if !strings.HasPrefix(sent.ID, "evt_") || sent.Deliveries != 1 {
		t.Fatalf("%+v", sent)
	}
	waitFor(t, "the receiver to handle the event", 30*time.Second, func() bool { return r.handled(sent.ID) == 1 })
	first := succeeded(t, client, sent.ID)
	if first.Attempt != 1 || first.ResponseStatus == nil || *first.ResponseStatus != 204 || first.EndpointID != hook.ID {
		t.Fatalf("%+v", first)
	}

	// What the server sent verifies under each scheme on its own.
	detail, err := client.Deliveries.Get(ctx, first.ID)
	ok(t, err)
	for _, prefix := range []string{"webhook-", "x-botix-"} {
		event, err := Verify([]byte(detail.Payload), pairsHeader(detail.RequestHeaders, prefix), *hook.Secret)
		ok(t, err)
		if event["event_id"] != sent.ID || event["data"].(map[string]any)["note"] != "ünïcode" {
			t.Fatalf("%s: %v", prefix, event)
		}
	}

	// A manual retry is the same event again: answered 2xx, handled once.
	again, err := client.Deliveries.Retry(ctx, first.ID)
	ok(t, err)
	if again.Attempt != 2 || again.EventID != sent.ID {
		t.Fatalf("%+v", again)
	}
	waitFor(t, "the retry to succeed", 30*time.Second, func() bool {
		d, err := client.Deliveries.Get(ctx, again.ID)
		ok(t, err)
		return d.Status == "succeeded"
	})
	if n := r.handled(sent.ID); n != 1 {
		t.Fatalf("handled %d times", n)
	}

	// After a rotation deliveries carry both signatures: the receiver, still on the old
	// secret, accepts them, and so does the new secret.
	rotated, err := client.Webhooks.RotateSecret(ctx, hook.ID)
	ok(t, err)
	if rotated.Secret == nil || *rotated.Secret == *hook.Secret {
		t.Fatal("the secret did not change")
	}
	later, err := client.Events.Send(ctx, "order.paid", map[string]any{"order": 43}, nil)
	ok(t, err)
	waitFor(t, "the post-rotation event", 30*time.Second, func() bool { return r.handled(later.ID) == 1 })
	detail, err = client.Deliveries.Get(ctx, succeeded(t, client, later.ID).ID)
	ok(t, err)
	_, err = Verify([]byte(detail.Payload), pairsHeader(detail.RequestHeaders, ""), *rotated.Secret)
	ok(t, err)

	// A forged request is refused by the receiver.
	forged, _ := http.NewRequest("POST", r.url("/webhooks"), strings.NewReader(`{"event_id":"evt_forged"}`))
	forged.Header = header("webhook-id", "evt_forged", "webhook-timestamp",
		strconv.FormatInt(time.Now().Unix(), 10), "webhook-signature", "v1,AAAA")
	resp, err := http.DefaultClient.Do(forged)
	ok(t, err)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("a forged request got %d", resp.StatusCode)
	}

	ok(t, client.Webhooks.Delete(ctx, hook.ID))
	_, err = client.Webhooks.Get(ctx, hook.ID)
	wantAPIError(t, err, 404, "not_found")
}

func TestAnEd25519EndpointsDeliveriesVerifyWithItsPublicKey(t *testing.T) {
	client := businessClient(t)
	port := freePort(t)
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{
		URL: (&receiver{port: port}).url("/webhooks"), Events: []string{"order.paid"}, SignatureScheme: "ed25519"})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	if hook.SignatureScheme != "ed25519" || hook.Secret != nil || hook.PublicKey == nil || !strings.HasPrefix(*hook.PublicKey, "whpk_") {
		t.Fatalf("%+v", hook)
	}
	// The README's receiver, given the public key where the secret would go.
	r := startReceiver(t, port, *hook.PublicKey)
	sent, err := client.Events.Send(ctx, "order.paid", map[string]any{"order": 44, "note": "ünïcode"}, nil)
	ok(t, err)
	waitFor(t, "the receiver to handle the event", 30*time.Second, func() bool { return r.handled(sent.ID) == 1 })
	detail, err := client.Deliveries.Get(ctx, succeeded(t, client, sent.ID).ID)
	ok(t, err)
	h := pairsHeader(detail.RequestHeaders, "")
	if h.Get("X-Botix-Signature") != "" {
		t.Fatal("an ed25519 delivery carries an HMAC signature")
	}
	for _, entry := range strings.Fields(h.Get("webhook-signature")) {
		if !strings.HasPrefix(entry, "v1a,") {
			t.Fatalf("entry %s", entry)
		}
	}
	event, err := Verify([]byte(detail.Payload), h, *hook.PublicKey)
	ok(t, err)
	if event["event_id"] != sent.ID {
		t.Fatal(event)
	}
}

func TestWebhooksCRUD(t *testing.T) {
	client := businessClient(t)
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{
		URL: "https://example.com/crud", Events: []string{"*"}, Headers: map[string]string{"X-Token": "t"}})
	ok(t, err)
	if !reflect.DeepEqual(hook.Headers, []string{"X-Token"}) || !reflect.DeepEqual(hook.Events, []string{"*"}) || hook.CreatedAt.IsZero() {
		t.Fatalf("%+v", hook)
	}
	changed, err := client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{
		Events: []string{"a.b", "c.d"}, Enabled: Bool(false), Description: String("off"), RateLimit: Int(5)})
	ok(t, err)
	if !reflect.DeepEqual(changed.Events, []string{"a.b", "c.d"}) || changed.Enabled || changed.Description != "off" ||
		changed.Secret != nil || *changed.RateLimit != 5 {
		t.Fatalf("%+v", changed)
	}
	unlimited, err := client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{Unlimited: true})
	ok(t, err)
	if unlimited.RateLimit != nil || unlimited.Description != "off" {
		t.Fatalf("%+v", unlimited)
	}
	all, err := client.Webhooks.List(ctx)
	ok(t, err)
	listed := false
	for _, w := range all {
		listed = listed || w.ID == hook.ID
	}
	got, err := client.Webhooks.Get(ctx, hook.ID)
	ok(t, err)
	if !listed || !reflect.DeepEqual(got, unlimited) {
		t.Fatalf("listed %v, got %+v", listed, got)
	}
	ok(t, client.Webhooks.Delete(ctx, hook.ID))
	_, err = client.Webhooks.Create(ctx, WebhookCreate{URL: "ftp://example.com", Events: []string{"*"}})
	wantAPIError(t, err, 422, "invalid")
}

// pem makes, with the openssl command line, a self-signed certificate (CN=sdk-client,
// 30 days), its key, and a key of another.
func pem(t *testing.T) (cert, key, other string) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not on PATH: the client certificate tests need it")
	}
	dir := t.TempDir()
	curve := []string{"-pkeyopt", "ec_paramgen_curve:prime256v1"}
	for _, args := range [][]string{
		append(append([]string{"req", "-x509", "-newkey", "ec"}, curve...), "-nodes", "-keyout", "key.pem",
			"-out", "cert.pem", "-days", "30", "-subj", "/CN=sdk-client"),
		append([]string{"genpkey", "-algorithm", "EC"}, append(curve, "-out", "other.pem")...),
	} {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	read := func(name string) string {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		ok(t, err)
		return string(raw)
	}
	return read("cert.pem"), read("key.pem"), read("other.pem")
}

func TestAClientCertificateIsSetShownAndRemoved(t *testing.T) {
	client := businessClient(t)
	cert, key, other := pem(t)
	pair := &ClientCertificateIn{Cert: cert, Key: key}
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/mtls", Events: []string{"*"}, ClientCertificate: pair})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	shown := hook.ClientCertificate
	if shown == nil || shown.Subject != "CN=sdk-client" {
		t.Fatalf("%+v", shown)
	}
	if days := time.Until(shown.NotAfter).Hours() / 24; days < 28 || days > 30 {
		t.Fatalf("not after %v", shown.NotAfter)
	}
	sameCert := func(w *Webhook, err error) bool {
		ok(t, err)
		return w.ClientCertificate != nil && w.ClientCertificate.Subject == shown.Subject && w.ClientCertificate.NotAfter.Equal(shown.NotAfter)
	}
	if !sameCert(client.Webhooks.Get(ctx, hook.ID)) {
		t.Fatal("get shows another certificate")
	}
	// Absent leaves it as it is; remove drops it.
	if !sameCert(client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{Description: String("kept")})) {
		t.Fatal("an update without a certificate changed it")
	}
	removed, err := client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{RemoveClientCertificate: true})
	ok(t, err)
	got, err := client.Webhooks.Get(ctx, hook.ID)
	ok(t, err)
	if removed.ClientCertificate != nil || got.ClientCertificate != nil {
		t.Fatal("not removed")
	}
	if !sameCert(client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{ClientCertificate: pair})) {
		t.Fatal("not set again")
	}
	_, err = client.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/mtls", Events: []string{"*"},
		ClientCertificate: &ClientCertificateIn{Cert: cert, Key: other}})
	if e := wantAPIError(t, err, 422, "invalid"); e.Message != "client_certificate: the key does not belong to the first certificate" {
		t.Fatal(e.Message)
	}
}

func TestAFilterDecidesWhichEventsAnEndpointGets(t *testing.T) {
	client := businessClient(t)
	kind := "payment.filtered_go"
	// Refused when saved, the message saying where.
	_, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/filtered", Events: []string{kind}, Filter: "data.amount >"})
	if e := wantAPIError(t, err, 422, "invalid"); !strings.HasPrefix(e.Message, "filter: ") || !strings.Contains(e.Message, "at 1:14") {
		t.Fatal(e.Message)
	}
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/filtered", Events: []string{kind}, Filter: "data.amount > 1000"})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	if hook.Filter == nil || *hook.Filter != "data.amount > 1000" {
		t.Fatalf("%+v", hook)
	}
	_, err = client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{Filter: String("data.amount >")})
	wantAPIError(t, err, 422, "invalid")

	// Too small: no attempt, and the event says which endpoint it skipped and why.
	small, err := client.Events.Send(ctx, kind, map[string]any{"amount": 5}, nil)
	ok(t, err)
	got, err := client.Events.Get(ctx, small.ID)
	ok(t, err)
	want := []FilteredOut{{EndpointID: hook.ID, Reason: "the filter was false"}}
	if small.Deliveries != 0 || got.Deliveries != 0 || !reflect.DeepEqual(got.FilteredOut, want) {
		t.Fatalf("%+v %+v", small, got)
	}
	waitFor(t, "the event in the list", 30*time.Second, func() bool {
		page, err := client.Events.List(ctx, EventListParams{Type: kind})
		ok(t, err)
		for _, e := range page.Data {
			if e.ID == small.ID {
				return reflect.DeepEqual(e.FilteredOut, want)
			}
		}
		return false
	})
	big, err := client.Events.Send(ctx, kind, map[string]any{"amount": 5000}, nil)
	ok(t, err)
	got, err = client.Events.Get(ctx, big.ID)
	ok(t, err)
	if big.Deliveries != 1 || got.Deliveries != 1 || len(got.FilteredOut) != 0 {
		t.Fatalf("%+v %+v", big, got)
	}

	// Absent leaves it as it is; remove drops it.
	filterOf := func(w *Webhook, err error) string {
		ok(t, err)
		if w.Filter == nil {
			return "<none>"
		}
		return *w.Filter
	}
	if f := filterOf(client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{Description: String("kept")})); f != "data.amount > 1000" {
		t.Fatal(f)
	}
	if f := filterOf(client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{Filter: String("data.amount > 10")})); f != "data.amount > 10" {
		t.Fatal(f)
	}
	if f := filterOf(client.Webhooks.Update(ctx, hook.ID, WebhookUpdate{RemoveFilter: true})); f != "<none>" {
		t.Fatal(f)
	}
	if f := filterOf(client.Webhooks.Get(ctx, hook.ID)); f != "<none>" {
		t.Fatal(f)
	}
	again, err := client.Events.Send(ctx, kind, map[string]any{"amount": 5}, nil)
	ok(t, err)
	if again.Deliveries != 1 {
		t.Fatalf("%+v", again)
	}
}

func TestAnEventTypesSchemaRefusesDataThatFailsIt(t *testing.T) {
	client := businessClient(t)
	kind := "schema.checked_go" // a type of its own: other tests send order.paid of any shape
	schema := map[string]any{"type": "object", "required": []any{"amount"},
		"properties": map[string]any{"amount": map[string]any{"type": "integer", "minimum": 1.0}}}
	defer client.EventTypes.DeleteSchema(ctx, kind)
	first, err := client.EventTypes.SetSchema(ctx, kind, schema)
	ok(t, err)
	if first.Event != kind || first.Version != 1 || !reflect.DeepEqual(first.Schema, schema) || first.UpdatedAt.IsZero() {
		t.Fatalf("%+v", first)
	}
	got, err := client.EventTypes.GetSchema(ctx, kind)
	ok(t, err)
	if !reflect.DeepEqual(got, schema) {
		t.Fatal(got)
	}
	// Data that fails it is refused, the message naming the path and the rule.
	_, err = client.Events.Send(ctx, kind, map[string]any{"amount": 0}, nil)
	if e := wantAPIError(t, err, 422, "invalid"); !strings.HasPrefix(e.Message, "data.amount:") || !strings.Contains(e.Message, "minimum") {
		t.Fatal(e.Message)
	}
	_, err = client.Events.Send(ctx, kind, map[string]any{"amount": 5}, nil)
	ok(t, err)
	again, err := client.EventTypes.SetSchema(ctx, kind, schema)
	ok(t, err)
	if again.Version != 2 || again.UpdatedAt.Before(first.UpdatedAt) {
		t.Fatalf("%+v", again)
	}
	// Nothing is fetched: only `#…` references.
	_, err = client.EventTypes.SetSchema(ctx, kind, map[string]any{"$ref": "https://example.com/x.json"})
	if e := wantAPIError(t, err, 422, "invalid"); !strings.HasPrefix(e.Message, "schema") {
		t.Fatal(e.Message)
	}
	ok(t, client.EventTypes.DeleteSchema(ctx, kind))
	_, err = client.EventTypes.GetSchema(ctx, kind)
	wantAPIError(t, err, 404, "not_found")
	_, err = client.Events.Send(ctx, kind, map[string]any{"amount": 0}, nil)
	ok(t, err)
}

func TestAnOrderingKeyIsSentAndReadBack(t *testing.T) {
	client := businessClient(t)
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/ordered", Events: []string{"order.keyed"}})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	orderingKey := "customer-go-" + newIdempotencyKey()[4:12]
	sent, err := client.Events.Send(ctx, "order.keyed", map[string]any{"n": 1}, &SendOptions{OrderingKey: orderingKey})
	ok(t, err)
	event, err := client.Events.Get(ctx, sent.ID)
	ok(t, err)
	if event.OrderingKey == nil || *event.OrderingKey != orderingKey {
		t.Fatalf("%+v", event)
	}
	// Its attempts (a retry may already be queued: example.com does not answer here). The
	// list reads up to the server's commit horizon, which may lag the 202 by a moment.
	var page *Page[Delivery]
	waitFor(t, "its attempts to be listed", 10*time.Second, func() bool {
		page, err = client.Deliveries.List(ctx, DeliveryListParams{OrderingKey: orderingKey})
		ok(t, err)
		return len(page.Data) > 0
	})
	for _, d := range page.Data {
		if d.EventID != sent.ID || d.OrderingKey == nil || *d.OrderingKey != orderingKey {
			t.Fatalf("%+v", d)
		}
	}
}

// An event with the same idempotency key is stored once: the repeat answers the first.
func TestAnIdempotencyKeyStoresTheEventOnce(t *testing.T) {
	client := businessClient(t)
	key := &SendOptions{IdempotencyKey: "go-" + newIdempotencyKey()}
	first, err := client.Events.Send(ctx, "order.once", map[string]any{"n": 1}, key)
	ok(t, err)
	second, err := client.Events.Send(ctx, "order.once", map[string]any{"n": 1}, key)
	ok(t, err)
	if *first != *second {
		t.Fatalf("%+v then %+v", first, second)
	}
	batch := []EventIn{{ID: key.IdempotencyKey + "-b", Event: "order.once", Data: map[string]any{"n": 2}}}
	a, err := client.Events.SendBatch(ctx, batch)
	ok(t, err)
	b, err := client.Events.SendBatch(ctx, batch)
	ok(t, err)
	if !reflect.DeepEqual(a, b) || a[0].ID == first.ID {
		t.Fatalf("%+v then %+v", a, b)
	}
}
