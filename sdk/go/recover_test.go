package posthorn

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"
)

// flaky is a receiver answering status to every delivery and noting (status, event id).
type flaky struct {
	mu     sync.Mutex
	status int
	seen   map[int][]string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		EventID string `json:"event_id"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	status := f.status
	f.seen[status] = append(f.seen[status], body.EventID)
	f.mu.Unlock()
	w.WriteHeader(status)
}

// got is the sorted ids of the events answered status.
func (f *flaky) got(status int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := append([]string(nil), f.seen[status]...)
	sort.Strings(ids)
	return ids
}

func distinct(ids []string) []string {
	var out []string
	for i, id := range ids {
		if i == 0 || ids[i-1] != id {
			out = append(out, id)
		}
	}
	return out
}

func TestRecoverReplaysTheDeadLettersOnceAndTheReplayCanBeFollowed(t *testing.T) {
	client := businessClient(t)
	t.Parallel()
	receiver := &flaky{status: 500, seen: map[int][]string{}}
	srv := httptest.NewServer(receiver)
	defer srv.Close()
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{URL: srv.URL + "/hook", Events: []string{"recover.go"}})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	var sent []string
	for n := 0; n < 2; n++ {
		s, err := client.Events.Send(ctx, "recover.go", map[string]any{"n": n}, nil)
		ok(t, err)
		sent = append(sent, s.ID)
	}
	sort.Strings(sent)
	// Every automatic attempt fails until the schedule is spent: dead letters.
	for _, id := range sent {
		waitFor(t, id+" to be dead-lettered", 60*time.Second, func() bool {
			page, err := client.Deliveries.List(ctx, DeliveryListParams{EventID: id, Status: "dead_letter"})
			ok(t, err)
			return len(page.Data) > 0
		})
	}
	if got := distinct(receiver.got(500)); len(got) != 2 || got[0] != sent[0] || got[1] != sent[1] {
		t.Fatalf("the receiver saw %v", got)
	}

	receiver.mu.Lock()
	receiver.status = 200
	receiver.mu.Unlock()
	since := time.Now().Add(-5 * time.Minute)
	replay, err := client.Webhooks.Recover(ctx, hook.ID, since, time.Time{})
	ok(t, err)
	if replay.Total != 2 || (replay.Status != "running" && replay.Status != "done") || replay.PerSecond <= 0 {
		t.Fatalf("%+v", replay)
	}
	var done *Replay
	waitFor(t, "the replay to finish", 30*time.Second, func() bool {
		done, err = client.Replays.Get(ctx, replay.ID)
		ok(t, err)
		return done.Status == "done" && done.Finished == done.Total
	})
	if done.ID != replay.ID || done.Total != 2 || done.Queued != 2 || done.Finished != 2 {
		t.Fatalf("%+v", done)
	}
	waitFor(t, "the receiver to get both again", 30*time.Second, func() bool { return len(receiver.got(200)) == 2 })
	if got := receiver.got(200); got[0] != sent[0] || got[1] != sent[1] { // once each
		t.Fatalf("the receiver got %v", got)
	}

	// Nothing fails any more: an empty replay, done at once.
	now := time.Now()
	empty, err := client.Webhooks.Recover(ctx, hook.ID, since, now.Add(time.Minute))
	ok(t, err)
	if empty.Total != 0 || empty.Queued != 0 || empty.ID == replay.ID {
		t.Fatalf("%+v", empty)
	}
	waitFor(t, "the empty replay to be done", 30*time.Second, func() bool {
		r, err := client.Replays.Get(ctx, empty.ID)
		ok(t, err)
		return r.Status == "done"
	})
	cancelled, err := client.Replays.Cancel(ctx, empty.ID)
	ok(t, err)
	if cancelled.ID != empty.ID || (cancelled.Status != "done" && cancelled.Status != "cancelled") {
		t.Fatalf("%+v", cancelled)
	}
	left, err := client.Replays.Cancel(ctx, replay.ID) // a finished replay is left as it was
	ok(t, err)
	if *left != *done {
		t.Fatalf("%+v became %+v", done, left)
	}

	// A window that ends before it starts is empty; errors: unknown replay or endpoint.
	backwards, err := client.Webhooks.Recover(ctx, hook.ID, now, now.Add(-time.Hour))
	ok(t, err)
	if backwards.Total != 0 || backwards.Status != "done" {
		t.Fatalf("%+v", backwards)
	}
	_, err = client.Replays.Get(ctx, 1_000_000_000_000)
	wantAPIError(t, err, 404, "not_found")
	_, err = client.Replays.Cancel(ctx, 1_000_000_000_000)
	wantAPIError(t, err, 404, "not_found")
	_, err = client.Webhooks.Recover(ctx, 1_000_000_000_000, since, time.Time{})
	wantAPIError(t, err, 404, "not_found")
}

// Another project's key finds none of this project's endpoints, events, attempts,
// replays or erasures: 404, as for ids that do not exist.
func TestAnotherProjectsIdsAreNotFound(t *testing.T) {
	client, op := businessClient(t), operatorClient(t)
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/isolated-go", Events: []string{"isolated.go"}})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	project, err := op.Projects.Create(ctx, ProjectParams{Name: "Go isolation, other project"})
	ok(t, err)
	defer op.Projects.Delete(ctx, project.ID)
	key, err := op.APIKeys.Create(ctx, project.ID, "other")
	ok(t, err)
	other := NewClient(key.Key, WithBaseURL(env(t, "POSTHORN_TEST_URL")))

	sent, err := client.Events.Send(ctx, "isolated.go", map[string]any{"n": 1}, &SendOptions{Subjects: []string{"user:iso"}})
	ok(t, err)
	var attempt Delivery
	waitFor(t, "an attempt", 30*time.Second, func() bool {
		page, err := client.Deliveries.List(ctx, DeliveryListParams{EventID: sent.ID})
		ok(t, err)
		if len(page.Data) > 0 {
			attempt = page.Data[0]
		}
		return len(page.Data) > 0
	})
	since := time.Now().Add(-time.Minute)
	replay, err := client.Webhooks.Recover(ctx, hook.ID, since, time.Time{})
	ok(t, err)
	erasure, err := client.Erasures.Create(ctx, "user:iso")
	ok(t, err)

	calls := map[string]func() error{
		"webhooks.get": func() error { _, err := other.Webhooks.Get(ctx, hook.ID); return err },
		"webhooks.update": func() error {
			_, err := other.Webhooks.Update(ctx, hook.ID, WebhookUpdate{Description: String("x")})
			return err
		},
		"webhooks.delete":  func() error { return other.Webhooks.Delete(ctx, hook.ID) },
		"webhooks.rotate":  func() error { _, err := other.Webhooks.RotateSecret(ctx, hook.ID); return err },
		"webhooks.recover": func() error { _, err := other.Webhooks.Recover(ctx, hook.ID, since, time.Time{}); return err },
		"events.get":       func() error { _, err := other.Events.Get(ctx, sent.ID); return err },
		"events.erase":     func() error { _, err := other.Events.EraseData(ctx, sent.ID); return err },
		"deliveries.get":   func() error { _, err := other.Deliveries.Get(ctx, attempt.ID); return err },
		"deliveries.retry": func() error { _, err := other.Deliveries.Retry(ctx, attempt.ID); return err },
		"replays.get":      func() error { _, err := other.Replays.Get(ctx, replay.ID); return err },
		"replays.cancel":   func() error { _, err := other.Replays.Cancel(ctx, replay.ID); return err },
		"erasures.get":     func() error { _, err := other.Erasures.Get(ctx, erasure.ID); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { wantAPIError(t, call(), 404, "not_found") })
	}
	// And its lists hold none of them.
	hooks, err := other.Webhooks.List(ctx)
	ok(t, err)
	events, err := other.Events.List(ctx, EventListParams{})
	ok(t, err)
	if len(hooks) != 0 || len(events.Data) != 0 {
		t.Fatalf("the other project lists %d endpoints and %d events", len(hooks), len(events.Data))
	}
	waitFor(t, "the replay to finish", 30*time.Second, func() bool {
		r, err := client.Replays.Get(ctx, replay.ID)
		ok(t, err)
		return r.Status == "done"
	})
}
