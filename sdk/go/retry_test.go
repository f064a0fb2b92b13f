package posthorn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The retry rules, as arithmetic and against a scripted local HTTP server (the real
// server cannot be made to answer 503 on demand). Waits are recorded, not waited.

func fixed(v float64) func() float64 { return func() float64 { return v } }

func TestBackoffDoublesWithJitterAndIsCapped(t *testing.T) {
	p := RetryPolicy{BackoffBase: time.Second, BackoffCap: 8 * time.Second}
	var low, high []time.Duration
	for n := 0; n < 6; n++ {
		low = append(low, p.Backoff(n, fixed(0)))
		high = append(high, p.Backoff(n, fixed(1)))
	}
	s := time.Second
	if !reflect.DeepEqual(low, []time.Duration{s / 2, s, 2 * s, 4 * s, 4 * s, 4 * s}) ||
		!reflect.DeepEqual(high, []time.Duration{s, 2 * s, 4 * s, 8 * s, 8 * s, 8 * s}) {
		t.Fatalf("low %v, high %v", low, high)
	}
	if p.Backoff(10000, jitter) > 8*s {
		t.Fatal("the cap does not hold")
	}
}

func TestRetryAfterIsReadAsSecondsOrAnHTTPDate(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		value string
		wait  time.Duration
		ok    bool
	}{
		{"7", 7 * time.Second, true},
		{now.Add(42 * time.Second).UTC().Format(http.TimeFormat), 42 * time.Second, true},
		{now.Add(-42 * time.Second).UTC().Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		if wait, ok := ParseRetryAfter(c.value, now); wait != c.wait || ok != c.ok {
			t.Errorf("%q: got %v %v", c.value, wait, ok)
		}
	}
}

func TestA429WaitsTheLargerOfRetryAfterAndTheBackoff(t *testing.T) {
	p := RetryPolicy{BackoffBase: time.Second, BackoffCap: 30 * time.Second}
	if w := p.Wait(429, 0, 10*time.Second, fixed(1)); w != 10*time.Second {
		t.Fatal(w)
	}
	if w := p.Wait(429, 5, 10*time.Second, fixed(1)); w != 30*time.Second {
		t.Fatal(w)
	}
	if w := p.Wait(503, 0, 10*time.Second, fixed(1)); w != time.Second { // Retry-After counts on 429 only
		t.Fatal(w)
	}
}

type answer struct {
	status int
	header map[string]string
	body   any
}

type request struct {
	method, path string
	header       http.Header
	body         any // the JSON received; nil when empty
}

// scripted answers each request with the next answer and notes what came.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	seen    []request
	sleeps  []time.Duration
}

func newScripted(t *testing.T, answers ...answer) (*scripted, *Client) {
	s := &scripted{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	client := NewClient("phk_test", WithBaseURL(srv.URL))
	client.t.sleep = s.sleep
	return s, client
}

func (s *scripted) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sleeps = append(s.sleeps, d)
	return nil
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &body)
	}
	s.mu.Lock()
	s.seen = append(s.seen, request{r.Method, r.URL.Path, r.Header.Clone(), body})
	a := s.answers[0]
	s.answers = s.answers[1:]
	s.mu.Unlock()
	for name, value := range a.header {
		w.Header().Set(name, value)
	}
	w.WriteHeader(a.status)
	if a.body != nil {
		_ = json.NewEncoder(w).Encode(a.body)
	}
}

// then replaces what is left of the script and forgets what was seen.
func (s *scripted) then(answers ...answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers, s.seen, s.sleeps = answers, nil, nil
}

func (s *scripted) calls() []string {
	var out []string
	for _, r := range s.seen {
		out = append(out, r.method+" "+r.path)
	}
	return out
}

var (
	errInternal = map[string]any{"error": map[string]string{"code": "internal", "message": "internal error"}}
	limited     = map[string]any{"error": map[string]string{"code": "rate_limited", "message": "slow down"}}
	hookJSON    = map[string]any{"id": 1, "url": "https://x.test/h", "events": []string{"*"}, "description": "",
		"enabled": true, "created_at": "2026-11-30T12:00:00.123456789Z", "headers": []string{}}
	replayJSON = map[string]any{"id": 7, "status": "running", "total": 2, "queued": 0, "finished": 0, "per_second": 10}
)

func fail(status int) answer { return answer{status, nil, errInternal} }

var ctx = context.Background()

func TestAGetIsRetriedAfter5xx(t *testing.T) {
	s, client := newScripted(t, fail(503), fail(500), answer{200, nil, hookJSON})
	hook, err := client.Webhooks.Get(ctx, 1)
	ok(t, err)
	if hook.ID != 1 || len(s.seen) != 3 || len(s.sleeps) != 2 {
		t.Fatalf("%v, %d requests, %d waits", hook, len(s.seen), len(s.sleeps))
	}
	if want := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC); !hook.CreatedAt.Equal(want) {
		t.Fatal(hook.CreatedAt)
	}
}

func TestCreatingAWebhookIsNotRetriedAfter5xx(t *testing.T) {
	s, client := newScripted(t, fail(503), answer{201, nil, hookJSON})
	_, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://x.test/h", Events: []string{"*"}})
	if e := wantAPIError(t, err, 503, "internal"); e.Message != "internal error" || len(s.seen) != 1 {
		t.Fatalf("%v after %d requests", e, len(s.seen))
	}
}

func TestRecoveringIsNotRetriedButFollowingAndCancellingAre(t *testing.T) {
	s, client := newScripted(t, fail(503), answer{202, nil, replayJSON})
	plusOne := time.FixedZone("+01:00", 3600)
	since := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	_, err := client.Webhooks.Recover(ctx, 1, since, time.Date(2026, 11, 30, 14, 0, 0, 0, plusOne))
	wantAPIError(t, err, 503, "internal")
	want := map[string]any{"since": "2026-11-30T12:00:00Z", "until": "2026-11-30T13:00:00Z"}
	if len(s.seen) != 1 || s.seen[0].path != "/public/v1/webhooks/1/recover" || !reflect.DeepEqual(s.seen[0].body, want) {
		t.Fatalf("%+v", s.seen)
	}
	// Times go as UTC; no until is sent unless given.
	s.then(answer{202, nil, replayJSON})
	_, err = client.Webhooks.Recover(ctx, 1, time.Date(2026, 11, 30, 13, 0, 0, 0, plusOne), time.Time{})
	ok(t, err)
	if !reflect.DeepEqual(s.seen[0].body, map[string]any{"since": "2026-11-30T12:00:00Z"}) {
		t.Fatal(s.seen[0].body)
	}
	s.then(fail(502), answer{200, nil, replayJSON})
	if r, err := client.Replays.Get(ctx, 7); err != nil || r.Total != 2 || len(s.seen) != 2 {
		t.Fatal(r, err)
	}
	cancelled := map[string]any{"id": 7, "status": "cancelled", "total": 2, "queued": 0, "finished": 0, "per_second": 10}
	s.then(fail(500), answer{200, nil, cancelled})
	if r, err := client.Replays.Cancel(ctx, 7); err != nil || r.Status != "cancelled" {
		t.Fatal(r, err)
	}
	if calls := s.calls(); !reflect.DeepEqual(calls, []string{"POST /public/v1/replays/7/cancel", "POST /public/v1/replays/7/cancel"}) {
		t.Fatal(calls)
	}
}

func TestSendingAnEventIsRetriedWithTheSameIdempotencyKey(t *testing.T) {
	s, client := newScripted(t, fail(502), answer{202, nil, map[string]any{"id": "evt_1", "deliveries": 0}})
	sent, err := client.Events.Send(ctx, "order.paid", map[string]any{}, nil)
	ok(t, err)
	first, second := s.seen[0].header.Get("Idempotency-Key"), s.seen[1].header.Get("Idempotency-Key")
	if sent.ID != "evt_1" || len(s.seen) != 2 || first == "" || first != second {
		t.Fatalf("%v: keys %q, %q", sent, first, second)
	}
	s.then(answer{202, nil, map[string]any{"id": "evt_2", "deliveries": 1}})
	_, err = client.Events.Send(ctx, "order.paid", 1, &SendOptions{IdempotencyKey: "mine", OrderingKey: "c-7", Subjects: []string{"user:1"}})
	ok(t, err)
	want := map[string]any{"event": "order.paid", "data": 1.0, "ordering_key": "c-7", "subjects": []any{"user:1"}}
	if s.seen[0].header.Get("Idempotency-Key") != "mine" || !reflect.DeepEqual(s.seen[0].body, want) {
		t.Fatalf("%v %v", s.seen[0].header, s.seen[0].body)
	}
}

var erasureJSON = map[string]any{"id": 9, "status": "running", "subject": nil, "event_id": "evt_1",
	"created_at": "2026-11-30T12:00:00Z", "finished_at": nil, "events": 1, "attempts": 2,
	"dead_lettered": 0, "inspector_copies": 0}

func TestErasingIsRetriedForOneEventButNotForASubject(t *testing.T) {
	// 202: an attempt was still in flight; 204: done.
	s, client := newScripted(t, fail(503), answer{202, nil, erasureJSON}, answer{204, nil, nil})
	erasure, err := client.Events.EraseData(ctx, "evt_1")
	ok(t, err)
	if erasure == nil || erasure.ID != 9 || erasure.FinishedAt != nil || *erasure.EventID != "evt_1" {
		t.Fatalf("%+v", erasure)
	}
	if erasure, err := client.Events.EraseData(ctx, "evt_1"); erasure != nil || err != nil {
		t.Fatal(erasure, err)
	}
	if len(s.seen) != 3 || s.calls()[2] != "DELETE /public/v1/events/evt_1/data" {
		t.Fatal(s.calls())
	}
	s.then(fail(503), answer{202, nil, erasureJSON})
	_, err = client.Erasures.Create(ctx, "user:42")
	wantAPIError(t, err, 503, "internal")
	if len(s.seen) != 1 {
		t.Fatal(s.calls())
	}
}

func TestABatchIsRetriedWithTheSameIdempotencyKeys(t *testing.T) {
	accepted := map[string]any{"data": []any{
		map[string]any{"id": "evt_1", "deliveries": 0}, map[string]any{"id": "evt_2", "deliveries": 1}}}
	s, client := newScripted(t, fail(502), answer{202, nil, accepted})
	sent, err := client.Events.SendBatch(ctx, []EventIn{
		{Event: "a.b", Data: map[string]any{}, Subjects: []string{"user:1"}},
		{Event: "a.b", Data: map[string]any{}, ID: "mine"},
	})
	ok(t, err)
	if len(sent) != 2 || sent[0].ID != "evt_1" || sent[1].Deliveries != 1 {
		t.Fatal(sent)
	}
	first, second := s.seen[0].body, s.seen[1].body
	items := first.(map[string]any)["events"].([]any)
	item0, item1 := items[0].(map[string]any), items[1].(map[string]any)
	if !reflect.DeepEqual(first, second) || item1["id"] != "mine" || item0["id"] == "" ||
		!reflect.DeepEqual(item0["subjects"], []any{"user:1"}) {
		t.Fatalf("%v\n%v", first, second)
	}
}

func TestOther4xxAreNeverRetried(t *testing.T) {
	invalid := map[string]any{"error": map[string]string{"code": "invalid", "message": "url: bad"}}
	s, client := newScripted(t, answer{422, nil, invalid})
	_, err := client.Webhooks.Update(ctx, 1, WebhookUpdate{URL: String("nope")})
	if e := wantAPIError(t, err, 422, "invalid"); e.Message != "url: bad" || len(s.seen) != 1 {
		t.Fatal(e, len(s.seen))
	}
}

func TestAnErrorPageFromAProxyIsReadable(t *testing.T) {
	_, client := newScripted(t, answer{404, nil, "no such page"})
	_, err := client.Events.Get(ctx, "evt_1")
	if e := wantAPIError(t, err, 404, "http_404"); e.Message != `"no such page"` {
		t.Fatal(e.Message)
	}
}

func TestA429IsRetriedAfterRetryAfterForAnyCall(t *testing.T) {
	s, client := newScripted(t, answer{429, map[string]string{"Retry-After": "3"}, limited}, answer{201, nil, hookJSON})
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://x.test/h", Events: []string{"*"}})
	ok(t, err)
	if hook.ID != 1 || len(s.sleeps) != 1 || s.sleeps[0] < 3*time.Second {
		t.Fatal(hook, s.sleeps)
	}
}

func TestARetryAfterBeyondMaxWaitIsARateLimitError(t *testing.T) {
	s, client := newScripted(t, answer{429, map[string]string{"Retry-After": "3600"}, limited})
	_, err := client.Events.List(ctx, EventListParams{})
	var rl *RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Hour || len(s.sleeps) != 0 {
		t.Fatalf("%v, waits %v", err, s.sleeps)
	}
	wantAPIError(t, err, 429, "rate_limited") // a RateLimitError is an APIError too
}

func TestASpentQuotaWaitsForTheResetBeforeTheNextCall(t *testing.T) {
	reset := time.Now().Unix() + 20
	spent := map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset, 10)}
	s, client := newScripted(t, answer{200, spent, hookJSON}, answer{200, nil, hookJSON})
	_, err := client.Webhooks.Get(ctx, 1)
	ok(t, err)
	if len(s.sleeps) != 0 {
		t.Fatal(s.sleeps)
	}
	_, err = client.Webhooks.Get(ctx, 1)
	ok(t, err)
	if len(s.sleeps) != 1 || s.sleeps[0] <= 18*time.Second || s.sleeps[0] > 21*time.Second {
		t.Fatal(s.sleeps)
	}
}

func TestConnectionErrorsAreRetriedForSafeCallsThenReturned(t *testing.T) {
	policy := DefaultRetryPolicy
	policy.MaxRetries = 2
	client := NewClient("phk_test", WithBaseURL(fmt.Sprintf("http://127.0.0.1:%d", freePort(t))), WithRetryPolicy(policy))
	var sleeps []time.Duration
	client.t.sleep = func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil }
	_, err := client.Events.Get(ctx, "evt_1")
	var conn *ConnectionError
	if !errors.As(err, &conn) || len(sleeps) != 2 || conn.Path != "/events/evt_1" {
		t.Fatalf("%v, waits %v", err, sleeps)
	}
	sleeps = nil
	if _, err := client.Deliveries.Retry(ctx, 1); !errors.As(err, &conn) || len(sleeps) != 0 {
		t.Fatalf("%v, waits %v", err, sleeps)
	}
}

func TestACancelledContextStopsTheWait(t *testing.T) {
	s, client := newScripted(t, answer{429, map[string]string{"Retry-After": "60"}, limited})
	client.t.sleep = sleepContext
	cancelled, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := client.Events.List(cancelled, EventListParams{})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 5*time.Second || len(s.seen) != 1 {
		t.Fatal(err, time.Since(started))
	}
}

func TestAnUpdateThatSetsAndRemovesIsRefusedBeforeSending(t *testing.T) {
	s, client := newScripted(t)
	pair := &ClientCertificateIn{Cert: "c", Key: "k"}
	for _, u := range []WebhookUpdate{
		{ClientCertificate: pair, RemoveClientCertificate: true},
		{Filter: String("true"), RemoveFilter: true},
	} {
		if _, err := client.Webhooks.Update(ctx, 1, u); !errors.Is(err, ErrConflictingUpdate) {
			t.Fatal(err)
		}
	}
	if _, err := NewClient("").Events.Get(ctx, "evt_1"); !errors.Is(err, ErrNoKey) || len(s.seen) != 0 {
		t.Fatal(err)
	}
}

func TestAnUpdateSendsOnlyWhatIsSetAndNullToRemove(t *testing.T) {
	s, client := newScripted(t, answer{200, nil, hookJSON})
	_, err := client.Webhooks.Update(ctx, 1, WebhookUpdate{
		Description: String(""), Enabled: Bool(false), Unlimited: true, RemoveFilter: true, RemoveClientCertificate: true,
	})
	ok(t, err)
	want := map[string]any{"description": "", "enabled": false, "rate_limit": nil, "filter": nil, "client_certificate": nil}
	if !reflect.DeepEqual(s.seen[0].body, want) || s.seen[0].method != "PATCH" {
		t.Fatal(s.seen[0].body)
	}
}
