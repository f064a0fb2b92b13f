package posthorn

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestTheIteratorWalks250EventsEachExactlyOnce(t *testing.T) {
	client := businessClient(t)
	t.Parallel()
	kind := fmt.Sprintf("walk.go_%d", time.Now().UnixNano())
	sent := make([]string, 250)
	var wg sync.WaitGroup
	errs := make(chan error, 250)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := w; n < 250; n += 4 {
				accepted, err := client.Events.Send(ctx, kind, map[string]any{"n": n}, nil)
				if err != nil {
					errs <- err
					return
				}
				sent[n] = accepted.ID
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	first, err := client.Events.List(ctx, EventListParams{Type: kind, Limit: 100})
	ok(t, err)
	if len(first.Data) != 100 || !first.HasMore || first.NextCursor == "" {
		t.Fatalf("%d items, has_more %v", len(first.Data), first.HasMore)
	}

	it := client.Events.Iter(ctx, EventListParams{Type: kind, Limit: 100})
	seen, err := it.All()
	ok(t, err)
	// Rows of transactions still open are held back; go on from the stored cursor.
	for deadline := time.Now().Add(30 * time.Second); len(seen) < 250 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		it = client.Events.Iter(ctx, EventListParams{Type: kind, Cursor: it.Cursor()})
		more, err := it.All()
		ok(t, err)
		seen = append(seen, more...)
	}
	ids := map[string]bool{}
	for _, e := range seen {
		ids[e.ID] = true
	}
	for _, id := range sent {
		delete(ids, id)
	}
	if len(seen) != 250 || len(ids) != 0 {
		t.Fatalf("saw %d events, %d not sent", len(seen), len(ids))
	}
	event, err := client.Events.Get(ctx, sent[7])
	ok(t, err)
	if !reflect.DeepEqual(event.Data, map[string]any{"n": 7.0}) {
		t.Fatal(event.Data)
	}
	// The stored cursor resumes after the last one: nothing is seen twice.
	rest, err := client.Events.Iter(ctx, EventListParams{Type: kind, Cursor: it.Cursor()}).All()
	ok(t, err)
	if len(rest) != 0 {
		t.Fatalf("%d seen again", len(rest))
	}
}

// sixtyCalls sends 60 events on a trial key (30 a minute), noting every attempt.
func sixtyCalls(baseURL, key string, threshold int) ([]EventAccepted, []Attempt, error) {
	policy := DefaultRetryPolicy
	policy.RateLimitThreshold = threshold
	var log []Attempt
	client := NewClient(key, WithBaseURL(baseURL), WithRetryPolicy(policy),
		WithOnResponse(func(a Attempt) { log = append(log, a) }))
	var results []EventAccepted
	for n := 0; n < 60; n++ {
		sent, err := client.Events.Send(ctx, "rate.test", map[string]any{"n": n}, nil)
		if err != nil {
			return results, log, err
		}
		results = append(results, *sent)
	}
	return results, log, nil
}

// checkNoCallBeforeItsWait: after a 429 no request goes out before Retry-After has
// passed; a proactive client also sends none between a reply that spent the quota and
// the reset.
func checkNoCallBeforeItsWait(t *testing.T, log []Attempt, proactive bool) {
	t.Helper()
	for i := 1; i < len(log); i++ {
		prev, next := log[i-1], log[i]
		if prev.Status == 429 {
			wait, _ := strconv.Atoi(prev.Header.Get("Retry-After"))
			if next.SentAt.Before(prev.ReceivedAt.Add(time.Duration(wait) * time.Second)) {
				t.Errorf("attempt %d went %v after a 429 asking for %d s", i, next.SentAt.Sub(prev.ReceivedAt), wait)
			}
		}
		if proactive && prev.Header.Get("X-RateLimit-Remaining") == "0" {
			reset, _ := strconv.ParseInt(prev.Header.Get("X-RateLimit-Reset"), 10, 64)
			if next.SentAt.Before(time.Unix(reset, 0)) {
				t.Errorf("attempt %d went before the reset", i)
			}
		}
	}
}

func TestSixtyCallsOnATrialKeyAllSucceedAndNoneGoesEarly(t *testing.T) {
	base, keyA, keyB := env(t, "POSTHORN_TEST_URL"), env(t, "POSTHORN_TEST_KEY_TRIAL_A"), env(t, "POSTHORN_TEST_KEY_TRIAL_B")
	t.Parallel()
	// Both at once, on two trial projects: the default client, which waits for the
	// reset when the quota is spent, and one that only reacts to 429s.
	type run struct {
		results []EventAccepted
		log     []Attempt
		err     error
	}
	var proactive, reactive run
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); proactive.results, proactive.log, proactive.err = sixtyCalls(base, keyA, 1) }()
	go func() { defer wg.Done(); reactive.results, reactive.log, reactive.err = sixtyCalls(base, keyB, 0) }()
	wg.Wait()
	for i, r := range []run{proactive, reactive} {
		ok(t, r.err)
		ids, accepted := map[string]bool{}, 0
		for _, s := range r.results {
			ids[s.ID] = true
		}
		for _, a := range r.log {
			if a.Status == 202 {
				accepted++
			} else if a.Status != 429 {
				t.Errorf("status %d", a.Status)
			}
		}
		if len(ids) != 60 || accepted != 60 {
			t.Fatalf("%d distinct events, %d accepted", len(ids), accepted)
		}
		checkNoCallBeforeItsWait(t, r.log, i == 0)
	}
	// Once the default client has seen the quota it never earns a 429 (before that, a
	// key already used this minute may refuse its first call).
	seenOK := false
	for _, a := range proactive.log {
		seenOK = seenOK || a.Status == 202
		if seenOK && a.Status == 429 {
			t.Fatal("the default client earned a 429")
		}
	}
	limitedOnce := false
	for _, a := range reactive.log {
		limitedOnce = limitedOnce || a.Status == 429
	}
	if !limitedOnce {
		t.Fatal("60 calls at 30 a minute must meet a 429")
	}
}
