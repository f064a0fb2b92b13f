package posthorn

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEventsSentWithASubjectAreErasedByIt(t *testing.T) {
	client := businessClient(t)
	// Nothing listens there: attempts fail at once and are dead-lettered within a second.
	hook, err := client.Webhooks.Create(ctx, WebhookCreate{
		URL: fmt.Sprintf("http://127.0.0.1:%d/gone", freePort(t)), Events: []string{"erasure.go"}})
	ok(t, err)
	defer client.Webhooks.Delete(ctx, hook.ID)
	subject := "user:go-" + newIdempotencyKey()[4:16]
	sent, err := client.Events.Send(ctx, "erasure.go", map[string]any{"email": "ana@example.com"},
		&SendOptions{Subjects: []string{subject, "tenant:7"}})
	ok(t, err)
	batch, err := client.Events.SendBatch(ctx, []EventIn{
		{Event: "erasure.go", Data: map[string]any{"n": 1}, Subjects: []string{subject}},
		{Event: "erasure.go", Data: map[string]any{"n": 2}},
	})
	ok(t, err)
	if batch[0].Deliveries != 1 || batch[1].Deliveries != 1 {
		t.Fatalf("%+v", batch)
	}
	event, err := client.Events.Get(ctx, sent.ID)
	ok(t, err)
	if !reflect.DeepEqual(event.Data, map[string]any{"email": "ana@example.com"}) ||
		!reflect.DeepEqual(event.Subjects, []string{subject, "tenant:7"}) || event.ErasedAt != nil || event.ErasureID != nil {
		t.Fatalf("%+v", event)
	}
	subjectsOf := func(id string) []string {
		e, err := client.Events.Get(ctx, id)
		ok(t, err)
		return e.Subjects
	}
	if !reflect.DeepEqual(subjectsOf(batch[0].ID), []string{subject}) || len(subjectsOf(batch[1].ID)) != 0 {
		t.Fatal("the batch's subjects are not as sent")
	}

	erasure, err := client.Erasures.Create(ctx, subject)
	ok(t, err)
	if erasure.Subject == nil || *erasure.Subject != subject || erasure.EventID != nil ||
		(erasure.Status != "running" && erasure.Status != "done") {
		t.Fatalf("%+v", erasure)
	}
	var done *Erasure
	waitFor(t, "the erasure to be done", 20*time.Second, func() bool {
		done, err = client.Erasures.Get(ctx, erasure.ID)
		ok(t, err)
		return done.Status == "done"
	})
	if done.ID != erasure.ID || done.Events != 2 || done.FinishedAt == nil {
		t.Fatalf("%+v", done)
	}
	for _, id := range []string{sent.ID, batch[0].ID} {
		erased, err := client.Events.Get(ctx, id)
		ok(t, err)
		if erased.Data != nil || len(erased.Subjects) != 0 || erased.ErasureID == nil || *erased.ErasureID != erasure.ID || erased.ErasedAt == nil {
			t.Fatalf("%+v", erased)
		}
	}
	kept, err := client.Events.Get(ctx, batch[1].ID)
	ok(t, err)
	if !reflect.DeepEqual(kept.Data, map[string]any{"n": 2.0}) || kept.ErasedAt != nil {
		t.Fatalf("%+v", kept)
	}

	// An erased event has nothing left to send again.
	attempts, err := client.Deliveries.List(ctx, DeliveryListParams{EventID: sent.ID})
	ok(t, err)
	_, err = client.Deliveries.Retry(ctx, attempts.Data[0].ID)
	wantAPIError(t, err, 409, "conflict")

	// One event by id: erased within the call; erasing it again answers the same.
	running, err := client.Events.EraseData(ctx, batch[1].ID)
	ok(t, err)
	if running != nil {
		t.Fatalf("%+v", running)
	}
	gone, err := client.Events.Get(ctx, batch[1].ID)
	ok(t, err)
	if gone.Data != nil || gone.ErasureID == nil || *gone.ErasureID == erasure.ID {
		t.Fatalf("%+v", gone)
	}
	running, err = client.Events.EraseData(ctx, batch[1].ID)
	if err != nil || running != nil {
		t.Fatal(running, err)
	}
}

func TestUnknownErasuresAndEventsAndRefusedSubjects(t *testing.T) {
	client := businessClient(t)
	_, err := client.Erasures.Get(ctx, 1_000_000_000_000)
	wantAPIError(t, err, 404, "not_found")
	_, err = client.Events.EraseData(ctx, "evt_unknown")
	wantAPIError(t, err, 404, "not_found")
	_, err = client.Erasures.Create(ctx, "")
	wantAPIError(t, err, 422, "invalid")
	_, err = client.Events.Send(ctx, "erasure.go", map[string]any{}, &SendOptions{Subjects: []string{""}})
	wantAPIError(t, err, 422, "invalid")
	eleven := strings.Fields(strings.Repeat("user:x ", 11))
	for i := range eleven {
		eleven[i] += fmt.Sprint(i)
	}
	_, err = client.Events.Send(ctx, "erasure.go", map[string]any{}, &SendOptions{Subjects: eleven})
	wantAPIError(t, err, 422, "invalid")
}
