package posthorn

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// eraseTimeout covers EraseData: the server may wait 40 s for attempts in flight.
const eraseTimeout = 60 * time.Second

// SendOptions are the optional parts of Events.Send.
type SendOptions struct {
	// IdempotencyKey de-duplicates the event: a repeat answers the first response and
	// stores nothing. One is made up when empty, so a retry after a lost answer never
	// sends the event twice; give your own to de-duplicate across processes.
	IdempotencyKey string
	// OrderingKey: events with the same key reach each endpoint one at a time, in the
	// order they were accepted.
	OrderingKey string
	// Subjects name the data subjects the event is about ("user:42"; at most 10), so
	// that Erasures.Create finds it.
	Subjects []string
}

// EventIn is one event of Events.SendBatch.
type EventIn struct {
	// ID is its idempotency key (made up when empty).
	ID          string   `json:"id,omitempty"`
	Event       string   `json:"event"`
	Data        any      `json:"data"`
	OrderingKey string   `json:"ordering_key,omitempty"`
	Subjects    []string `json:"subjects,omitempty"`
}

// Events is /events: send events; read them back by id or by cursor; erase one's data.
type Events struct{ t *transport }

// Send stores the event and fans it out to every enabled endpoint subscribed to its
// type. Retried after a 5xx or a lost answer with the same idempotency key.
func (s *Events) Send(ctx context.Context, event string, data any, opts *SendOptions) (*EventAccepted, error) {
	if opts == nil {
		opts = &SendOptions{}
	}
	key := opts.IdempotencyKey
	if key == "" {
		key = newIdempotencyKey()
	}
	body := EventIn{Event: event, Data: data, OrderingKey: opts.OrderingKey, Subjects: opts.Subjects}
	return doJSON[EventAccepted](ctx, s.t, call{
		method: "POST", path: "/events", body: body,
		header: map[string]string{"Idempotency-Key": key}, retrySafe: true,
	})
}

// SendBatch stores up to 100 events in one request, all or none, fanned out in order;
// the answers are in the same order. Each costs one unit of the rate limit. Every item
// without an ID gets a made-up idempotency key, so a retry never sends one twice.
func (s *Events) SendBatch(ctx context.Context, events []EventIn) ([]EventAccepted, error) {
	items := make([]EventIn, len(events))
	for i, e := range events {
		if e.ID == "" {
			e.ID = newIdempotencyKey()
		}
		items[i] = e
	}
	var out struct {
		Data []EventAccepted `json:"data"`
	}
	call := call{method: "POST", path: "/events/batch", body: map[string]any{"events": items}, retrySafe: true}
	if _, err := s.t.do(ctx, call, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// Get returns one event.
func (s *Events) Get(ctx context.Context, id string) (*Event, error) {
	return get[Event](ctx, s.t, pathOf("events", id))
}

// EraseData erases the event's data and subjects and its attempts' response bodies and
// headers; its waiting attempts become dead letters (error_kind "erased"). It answers
// nil once done (also for an event erased before), or the Erasure still running if an
// attempt was in flight after the server's 40 s wait, which finishes when that attempt
// comes back (Erasures.Get). Retried like a GET: a repeat erases nothing more.
func (s *Events) EraseData(ctx context.Context, id string) (*Erasure, error) {
	var out *Erasure // stays nil for the empty 204
	_, err := s.t.do(ctx, call{
		method: "DELETE", path: pathOf("events", id, "data"), retrySafe: true, timeout: eraseTimeout,
	}, &out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EventListParams select events; the zero value lists them all from the beginning.
type EventListParams struct {
	Cursor string
	// Limit is the page size, 1 to 200 (the server's default when 0; 100 for Iter).
	Limit int
	Since time.Time
	Type  string
}

func (p EventListParams) query() url.Values {
	return queryOf("cursor", p.Cursor, "limit", p.Limit, "since", p.Since, "type", p.Type)
}

// List returns one page, oldest first.
func (s *Events) List(ctx context.Context, p EventListParams) (*Page[Event], error) {
	return publicPage[Event](ctx, s.t, "/events", p.query())
}

// Iter walks every event from p.Cursor (or the beginning) on, each exactly once.
func (s *Events) Iter(ctx context.Context, p EventListParams) *Iterator[Event] {
	return iterate(ctx, p, s.List)
}

func (p *EventListParams) paging() (cursor *string, limit *int) { return &p.Cursor, &p.Limit }

// Deliveries is /deliveries: every attempt; manual retry.
type Deliveries struct{ t *transport }

// DeliveryListParams select attempts; the zero value lists them all.
type DeliveryListParams struct {
	Cursor      string
	Limit       int
	Since       time.Time
	Status      string // pending, in_flight, succeeded, failed, dead_letter
	EventID     string
	OrderingKey string
}

func (p DeliveryListParams) query() url.Values {
	return queryOf("cursor", p.Cursor, "limit", p.Limit, "since", p.Since, "status", p.Status,
		"event_id", p.EventID, "ordering_key", p.OrderingKey)
}

// List returns one page, oldest first.
func (s *Deliveries) List(ctx context.Context, p DeliveryListParams) (*Page[Delivery], error) {
	return publicPage[Delivery](ctx, s.t, "/deliveries", p.query())
}

// Iter walks every attempt from p.Cursor (or the beginning) on, each exactly once.
func (s *Deliveries) Iter(ctx context.Context, p DeliveryListParams) *Iterator[Delivery] {
	return iterate(ctx, p, s.List)
}

func (p *DeliveryListParams) paging() (cursor *string, limit *int) { return &p.Cursor, &p.Limit }

// Get returns one attempt with the exact body sent and the headers both ways.
func (s *Deliveries) Get(ctx context.Context, id int64) (*DeliveryDetail, error) {
	return get[DeliveryDetail](ctx, s.t, pathOf("deliveries", id))
}

// Retry sends the event again as a new attempt. Not retried on 5xx: a repeat would
// queue a second attempt (or answer 409).
func (s *Deliveries) Retry(ctx context.Context, id int64) (*Delivery, error) {
	return doJSON[Delivery](ctx, s.t, call{method: "POST", path: pathOf("deliveries", id, "retry")})
}

// publicPage reads a page of /public/v1: {"data": […], "meta": {"next_cursor", "has_more"}}.
func publicPage[T any](ctx context.Context, t *transport, path string, query url.Values) (*Page[T], error) {
	var out struct {
		Data []T `json:"data"`
		Meta struct {
			NextCursor string `json:"next_cursor"`
			HasMore    bool   `json:"has_more"`
		} `json:"meta"`
	}
	if _, err := t.do(ctx, call{method: "GET", path: path, query: query, retrySafe: true}, &out); err != nil {
		return nil, err
	}
	return &Page[T]{Data: out.Data, HasMore: out.Meta.HasMore, NextCursor: out.Meta.NextCursor}, nil
}

// queryOf builds a query from name, value pairs, leaving out zero values.
func queryOf(pairs ...any) url.Values {
	q := url.Values{}
	for i := 0; i < len(pairs); i += 2 {
		name := pairs[i].(string)
		switch v := pairs[i+1].(type) {
		case string:
			if v != "" {
				q.Set(name, v)
			}
		case int:
			if v != 0 {
				q.Set(name, strconv.Itoa(v))
			}
		case time.Time:
			if !v.IsZero() {
				q.Set(name, rfc3339(v))
			}
		case Date:
			if !v.IsZero() {
				q.Set(name, v.String())
			}
		default:
			panic(fmt.Sprintf("posthorn: queryOf: %T", v))
		}
	}
	return q
}

// pageable is what the list params have in common: where to start and the page size.
type pageable interface {
	paging() (cursor *string, limit *int)
}

// iterate walks list page by page from p's cursor, 100 items a page unless p says.
func iterate[T any, P any, PP interface {
	*P
	pageable
}](ctx context.Context, p P, list func(context.Context, P) (*Page[T], error)) *Iterator[T] {
	cursor, limit := PP(&p).paging()
	if *limit == 0 {
		*limit = 100
	}
	return newIterator(ctx, *cursor, func(ctx context.Context, next string) (*Page[T], error) {
		*cursor = next
		return list(ctx, p)
	})
}

// newIdempotencyKey is "phk-" and a random UUID, as every Posthorn library makes them.
func newIdempotencyKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("posthorn: no randomness: " + err.Error())
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("phk-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Iterator walks the items of every page in turn:
//
//	it := client.Events.Iter(ctx, posthorn.EventListParams{Type: "order.paid"})
//	for it.Next() {
//		fmt.Println(it.Value().ID)
//	}
//	if err := it.Err(); err != nil { … }
//
// Cursor is where the pages read so far end: store it and pass it as the params'
// Cursor later to go on from there.
type Iterator[T any] struct {
	ctx    context.Context
	fetch  func(context.Context, string) (*Page[T], error)
	cursor string
	buffer []T
	value  T
	done   bool
	err    error
}

func newIterator[T any](ctx context.Context, cursor string, fetch func(context.Context, string) (*Page[T], error)) *Iterator[T] {
	return &Iterator[T]{ctx: ctx, fetch: fetch, cursor: cursor}
}

// Next moves to the next item, fetching a page when needed; false at the end or on
// an error (see Err).
func (it *Iterator[T]) Next() bool {
	for len(it.buffer) == 0 {
		if it.done || it.err != nil {
			return false
		}
		page, err := it.fetch(it.ctx, it.cursor)
		if err != nil {
			it.err = err
			return false
		}
		it.buffer, it.cursor, it.done = page.Data, page.NextCursor, !page.HasMore
	}
	it.value, it.buffer = it.buffer[0], it.buffer[1:]
	return true
}

// Value is the current item.
func (it *Iterator[T]) Value() T { return it.value }

// Err is the error that ended the walk, if any.
func (it *Iterator[T]) Err() error { return it.err }

// Cursor is where the pages read so far end.
func (it *Iterator[T]) Cursor() string { return it.cursor }

// All reads the rest of the walk into a slice.
func (it *Iterator[T]) All() ([]T, error) {
	var out []T
	for it.Next() {
		out = append(out, it.Value())
	}
	return out, it.Err()
}
