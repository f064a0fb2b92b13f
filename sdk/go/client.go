package posthorn

import (
	"context"
	"errors"
	"time"
)

// Client calls Posthorn's public API (/public/v1) with a project's API key (phk_…).
//
// Calls back off on 429 (honouring Retry-After), wait for the minute's reset when the
// quota is spent, and retry 5xx and connection errors for calls safe to repeat. A Client
// is safe for use by several goroutines, which share its view of the rate limit.
type Client struct {
	Webhooks   *Webhooks
	Events     *Events
	Deliveries *Deliveries
	Replays    *Replays
	Erasures   *Erasures
	EventTypes *EventTypes
	Listen     *Listen
	t          *transport
}

// NewClient makes a client for the public API. With an empty key every call returns
// ErrNoKey.
func NewClient(apiKey string, opts ...Option) *Client {
	t := newTransport(apiKey, "/public/v1", opts)
	return &Client{
		Webhooks:   &Webhooks{t},
		Events:     &Events{t},
		Deliveries: &Deliveries{t},
		Replays:    &Replays{t},
		Erasures:   &Erasures{t},
		EventTypes: &EventTypes{t},
		Listen:     &Listen{t},
		t:          t,
	}
}

// String, Int and Bool return a pointer to their argument, for the optional fields of
// WebhookUpdate.
func String(s string) *string { return &s }

// Int returns a pointer to n.
func Int(n int) *int { return &n }

// Bool returns a pointer to b.
func Bool(b bool) *bool { return &b }

// rfc3339 is how times go to the API: UTC, with the fraction when there is one.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ClientCertificateIn is a client certificate for an endpoint, presented to a receiver
// that asks for one (mutual TLS). Write-only: answers show Webhook.ClientCertificate.
type ClientCertificateIn struct {
	// Cert is PEM: the certificate first, then up to 4 of its chain (at most 16 KiB).
	Cert string `json:"cert"`
	// Key is PEM: its private key (at most 16 KiB).
	Key string `json:"key"`
}

// WebhookCreate is a new endpoint. Events and URL (or Destination) are required; the
// rest is optional.
type WebhookCreate struct {
	// URL is the endpoint's HTTP URL; leave it empty and set Destination to publish to
	// a broker instead.
	URL string `json:"url,omitempty"`
	// Destination is a broker to publish to instead of URL, for example
	// {"type": "redis", "url": "redis://:pw@host:6379/0", "stream": "orders"} or
	// {"type": "nats", "url": "nats://host:4222", "subject": "orders.paid"}. Its
	// credentials are never returned.
	Destination map[string]any `json:"destination,omitempty"`
	// Events are the event types sent to it, or ["*"] for all.
	Events      []string          `json:"events"`
	Description string            `json:"description,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// RateLimit is attempts per second at most (nil: unlimited).
	RateLimit         *int                 `json:"rate_limit,omitempty"`
	ClientCertificate *ClientCertificateIn `json:"client_certificate,omitempty"`
	// SignatureScheme is "hmac-sha256" (the default) or "ed25519", whose deliveries
	// carry v1a signatures checked with the answer's PublicKey (no secret).
	SignatureScheme string `json:"signature_scheme,omitempty"`
	// Filter is a CEL expression over event, data and subjects (at most 1024 bytes, e.g.
	// "data.amount > 1000"); an event it does not match makes no attempt here.
	Filter string `json:"filter,omitempty"`
}

// WebhookUpdate changes the fields that are set and leaves the others as they are.
type WebhookUpdate struct {
	URL         *string
	Events      []string
	Description *string
	Enabled     *bool
	Headers     map[string]string
	RateLimit   *int
	// Unlimited lifts the rate limit.
	Unlimited bool
	// ClientCertificate replaces the certificate; RemoveClientCertificate drops it.
	ClientCertificate       *ClientCertificateIn
	RemoveClientCertificate bool
	// SignatureScheme switches schemes, both signing for 24 hours; a switch to
	// "hmac-sha256" answers the new secret.
	SignatureScheme *string
	// Filter replaces the CEL filter; RemoveFilter drops it so every event of Events
	// is sent.
	Filter       *string
	RemoveFilter bool
}

// ErrConflictingUpdate is returned, before anything is sent, for an update that both
// sets and removes the same thing.
var ErrConflictingUpdate = errors.New("posthorn: an update cannot both set and remove the same field")

func (u WebhookUpdate) body() (map[string]any, error) {
	if (u.ClientCertificate != nil && u.RemoveClientCertificate) || (u.Filter != nil && u.RemoveFilter) {
		return nil, ErrConflictingUpdate
	}
	body := map[string]any{}
	set := func(name string, value any, present bool) {
		if present {
			body[name] = value
		}
	}
	set("url", u.URL, u.URL != nil)
	set("events", u.Events, u.Events != nil)
	set("description", u.Description, u.Description != nil)
	set("enabled", u.Enabled, u.Enabled != nil)
	set("headers", u.Headers, u.Headers != nil)
	set("rate_limit", u.RateLimit, u.RateLimit != nil)
	set("client_certificate", u.ClientCertificate, u.ClientCertificate != nil)
	set("signature_scheme", u.SignatureScheme, u.SignatureScheme != nil)
	set("filter", u.Filter, u.Filter != nil)
	// The server reads null as "remove", absent as "leave as it is".
	set("rate_limit", nil, u.Unlimited)
	set("client_certificate", nil, u.RemoveClientCertificate)
	set("filter", nil, u.RemoveFilter)
	return body, nil
}

// Webhooks is /webhooks: the project's endpoints.
type Webhooks struct{ t *transport }

// Create makes an endpoint; the answer carries its Secret (or, for ed25519, its
// PublicKey). Not retried on 5xx: a repeat could make a second endpoint. A filter or
// certificate the server refuses is an APIError 422 "invalid", its message saying why.
func (s *Webhooks) Create(ctx context.Context, w WebhookCreate) (*Webhook, error) {
	return doJSON[Webhook](ctx, s.t, call{method: "POST", path: "/webhooks", body: w})
}

// List returns every endpoint of the project.
func (s *Webhooks) List(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Data []Webhook `json:"data"`
	}
	_, err := s.t.do(ctx, call{method: "GET", path: "/webhooks", retrySafe: true}, &out)
	return out.Data, err
}

// Get returns one endpoint.
func (s *Webhooks) Get(ctx context.Context, id int64) (*Webhook, error) {
	return get[Webhook](ctx, s.t, pathOf("webhooks", id))
}

// Update changes the fields set in u. Retried like a GET: it sets values, so a repeat
// leaves the same endpoint.
func (s *Webhooks) Update(ctx context.Context, id int64, u WebhookUpdate) (*Webhook, error) {
	body, err := u.body()
	if err != nil {
		return nil, err
	}
	return doJSON[Webhook](ctx, s.t, call{method: "PATCH", path: pathOf("webhooks", id), body: body, retrySafe: true})
}

// Delete removes an endpoint.
func (s *Webhooks) Delete(ctx context.Context, id int64) error {
	_, err := s.t.do(ctx, call{method: "DELETE", path: pathOf("webhooks", id), retrySafe: true}, nil)
	return err
}

// RotateSecret gives the endpoint a new secret; the old one stays valid for a while
// (deliveries carry both signatures). Not retried on 5xx: a repeat would rotate twice.
func (s *Webhooks) RotateSecret(ctx context.Context, id int64) (*Webhook, error) {
	return doJSON[Webhook](ctx, s.t, call{method: "POST", path: pathOf("webhooks", id, "rotate-secret")})
}

// Recover replays, once each, the endpoint's (event, endpoint) pairs still failing among
// the attempts made from since to until (zero: now): failed or dead-lettered, with no
// success since and nothing waiting. It answers the Replay at once (Total may be 0);
// follow it with Replays.Get. Not retried on 5xx: a repeat would start a second replay.
func (s *Webhooks) Recover(ctx context.Context, id int64, since, until time.Time) (*Replay, error) {
	body := map[string]string{"since": rfc3339(since)}
	if !until.IsZero() {
		body["until"] = rfc3339(until)
	}
	return doJSON[Replay](ctx, s.t, call{method: "POST", path: pathOf("webhooks", id, "recover"), body: body})
}

// Replays is /replays: follow or cancel a replay started by Webhooks.Recover.
type Replays struct{ t *transport }

// Get returns the replay and how far it has come.
func (s *Replays) Get(ctx context.Context, id int64) (*Replay, error) {
	return get[Replay](ctx, s.t, pathOf("replays", id))
}

// Cancel stops the replay (what it queued stays queued) and answers it: "cancelled",
// or unchanged if it had finished. Retried like a GET: a repeat leaves the same replay.
func (s *Replays) Cancel(ctx context.Context, id int64) (*Replay, error) {
	return doJSON[Replay](ctx, s.t, call{method: "POST", path: pathOf("replays", id, "cancel"), retrySafe: true})
}

// Erasures is /erasures: erase every event that names a data subject; follow it.
type Erasures struct{ t *transport }

// Create erases, in the background, every event of the project accepted until now
// whose subjects name subject, as Events.EraseData does one; it answers the erasure at
// once ("running"), which Get follows until it is "done". Beyond the project's
// concurrent_erasures it is an APIError 422 "limit_reached". Not retried on 5xx: a
// repeat would start a second erasure.
func (s *Erasures) Create(ctx context.Context, subject string) (*Erasure, error) {
	return doJSON[Erasure](ctx, s.t, call{method: "POST", path: "/erasures", body: map[string]string{"subject": subject}})
}

// Get returns the erasure and what it has erased so far.
func (s *Erasures) Get(ctx context.Context, id int64) (*Erasure, error) {
	return get[Erasure](ctx, s.t, pathOf("erasures", id))
}

// EventTypes is /event-types/{type}/schema: a JSON Schema per event type, which the
// data of its events must pass.
type EventTypes struct{ t *transport }

// SetSchema sets (or replaces) the JSON Schema (draft 2020-12) that the data of every
// event of eventType sent from now on must pass: Events.Send and SendBatch return an
// APIError 422 "invalid" for one that fails it, the message naming the path and the
// rule. $ref resolves only within the schema; format is asserted. Retried like a GET: a
// repeat leaves the same schema (its version one more).
func (s *EventTypes) SetSchema(ctx context.Context, eventType string, schema map[string]any) (*EventTypeSchema, error) {
	return doJSON[EventTypeSchema](ctx, s.t, call{method: "PUT", path: pathOf("event-types", eventType, "schema"), body: schema, retrySafe: true})
}

// GetSchema returns the schema as set; an APIError 404 "not_found" when there is none.
func (s *EventTypes) GetSchema(ctx context.Context, eventType string) (map[string]any, error) {
	var out map[string]any
	_, err := s.t.do(ctx, call{method: "GET", path: pathOf("event-types", eventType, "schema"), retrySafe: true}, &out)
	return out, err
}

// DeleteSchema removes the type's schema: its events are no longer checked. An
// APIError 404 "not_found" when there is none.
func (s *EventTypes) DeleteSchema(ctx context.Context, eventType string) error {
	_, err := s.t.do(ctx, call{method: "DELETE", path: pathOf("event-types", eventType, "schema"), retrySafe: true}, nil)
	return err
}

// get is a GET of one model.
func get[T any](ctx context.Context, t *transport, path string) (*T, error) {
	return doJSON[T](ctx, t, call{method: "GET", path: path, retrySafe: true})
}

// doJSON makes the call and decodes its answer as a T; nil with the error if it fails.
func doJSON[T any](ctx context.Context, t *transport, c call) (*T, error) {
	var out T
	if _, err := t.do(ctx, c, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
