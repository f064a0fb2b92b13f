package posthorn

import "time"

// The public API's answers; JSON names are the API's. Each model is checked against
// /public/v1/openapi.json by the test suite. Fields the server adds later are ignored,
// so an older client keeps working.

// ClientCertificate is what is shown of an endpoint's client certificate (its PEM and
// key never are).
type ClientCertificate struct {
	Subject  string    `json:"subject"` // e.g. "CN=posthorn-client, O=Shop"
	NotAfter time.Time `json:"not_after"`
}

// Destination is where an endpoint that is no plain URL sends: "listen", a `posthorn
// listen` session's (its deliveries go to the CLI's machine), or a broker it publishes
// to ("redis", "nats", "mqtt", "rabbitmq") with its settings; its credentials are never returned.
type Destination struct {
	Type string `json:"type"`
	// Name is a listen session's --name; nil: it ends when its CLI exits (nil for a broker).
	Name      *string `json:"name"`
	Connected bool    `json:"connected"` // a listen session's CLI is connected now
	URL       *string `json:"url"`       // a broker's URL, without credentials
	Stream    *string `json:"stream"`    // redis: the stream appended to
	MaxLen    *int64  `json:"maxlen"`    // redis: the stream's approximate length bound
	Subject   *string `json:"subject"`   // nats: the JetStream subject published to
	// Exchange and RoutingKey are a rabbitmq destination's ("": the default exchange).
	Exchange   *string `json:"exchange"`
	RoutingKey *string `json:"routing_key"`
	Topic      *string `json:"topic"` // mqtt: the topic published to
	QoS        *int    `json:"qos"`   // mqtt: 0 or 1
	// CredentialsSet says a broker has credentials (sealed, never shown).
	CredentialsSet bool `json:"credentials_set"`
}

// Webhook is an endpoint. Secret is only set in the answers to Create and RotateSecret
// of an HMAC endpoint, and to an Update that switches to "hmac-sha256".
type Webhook struct {
	ID          int64     `json:"id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	Enabled     bool      `json:"enabled"`
	CreatedAt   time.Time `json:"created_at"`
	// Headers names the custom headers sent with each attempt (their values are hidden).
	Headers []string `json:"headers"`
	// RateLimit is attempts per second at most; nil: unlimited.
	RateLimit *int `json:"rate_limit"`
	// ClientCertificate is presented when the receiver asks for one (mutual TLS).
	ClientCertificate *ClientCertificate `json:"client_certificate"`
	// SignatureScheme is "hmac-sha256" (signed with the secret) or "ed25519" (v1a,
	// checked with PublicKey).
	SignatureScheme string  `json:"signature_scheme"`
	PublicKey       *string `json:"public_key"` // "whpk_…", once the endpoint has an ed25519 key
	// Filter is the CEL expression events must match to be sent here; nil: every event
	// of Events.
	Filter *string `json:"filter"`
	Secret *string `json:"secret"`
	// Destination is only set for an endpoint that is no plain URL (a `posthorn listen`
	// session's).
	Destination *Destination `json:"destination,omitempty"`
}

// ListenSession answers Listen.Open: the session's endpoint, the secret its deliveries
// are signed with, and the path (under /public/v1) of its WebSocket.
type ListenSession struct {
	Endpoint    Webhook `json:"endpoint"`
	Secret      string  `json:"secret"` // "whsec_…": the local receiver checks signatures with it
	ConnectPath string  `json:"connect_path"`
	// Reattached is true when an existing named session was taken up again (answered
	// 200; a new session is 201).
	Reattached bool `json:"reattached"`
}

// EventAccepted answers a sent event: its id and how many endpoints it went to.
type EventAccepted struct {
	ID         string `json:"id"`
	Deliveries int    `json:"deliveries"`
}

// FilteredOut is an endpoint subscribed to an event's type that its filter kept the
// event from.
type FilteredOut struct {
	EndpointID int64  `json:"endpoint_id"`
	Reason     string `json:"reason"` // e.g. "the filter was false", or why it failed
}

// Event is a stored event.
type Event struct {
	ID         string    `json:"id"`
	Event      string    `json:"event"`
	Deliveries int       `json:"deliveries"`
	CreatedAt  time.Time `json:"created_at"`
	// Data is nil once erased.
	Data        map[string]any `json:"data"`
	OrderingKey *string        `json:"ordering_key"`
	// Subjects are the data subjects it names; empty once erased.
	Subjects []string `json:"subjects"`
	// ErasedAt and ErasureID say when its data was erased and by which erasure.
	ErasedAt  *time.Time `json:"erased_at"`
	ErasureID *int64     `json:"erasure_id"`
	// FilteredOut lists the endpoints subscribed to its type whose filters it did not
	// pass, and why: they had no attempt (Deliveries counts only the others).
	FilteredOut []FilteredOut `json:"filtered_out"`
}

// Delivery is one delivery attempt.
type Delivery struct {
	ID             int64      `json:"id"`
	RequestID      string     `json:"request_id"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	EndpointID     int64      `json:"endpoint_id"`
	TargetURL      string     `json:"target_url"`
	Attempt        int        `json:"attempt"`
	Trigger        string     `json:"trigger"`
	TriggeredBy    *string    `json:"triggered_by"`
	Status         string     `json:"status"`
	ScheduledAt    time.Time  `json:"scheduled_at"`
	StartedAt      *time.Time `json:"started_at"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	DurationMS     *int64     `json:"duration_ms"`
	ResponseStatus *int       `json:"response_status"`
	ErrorKind      *string    `json:"error_kind"`
	Error          *string    `json:"error"`
	OrderingKey    *string    `json:"ordering_key"`
	// WaitsFor is, while the attempt waits behind an earlier event with the same
	// ordering key, that event's id.
	WaitsFor *string `json:"waits_for"`
}

// DeliveryDetail is an attempt with the exact body sent and the headers both ways, as
// (name, value) pairs in the order sent.
type DeliveryDetail struct {
	Delivery
	Payload         string      `json:"payload"`
	RequestHeaders  [][2]string `json:"request_headers"`
	ResponseHeaders [][2]string `json:"response_headers"`
	ResponseBody    *string     `json:"response_body"`
}

// Replay is a replay, as Webhooks.Recover starts it, and how far it has come.
type Replay struct {
	ID        int64  `json:"id"`
	Status    string `json:"status"`     // running, done or cancelled
	Total     int    `json:"total"`      // the (event, endpoint) pairs it sends, one attempt each
	Queued    int    `json:"queued"`     // attempts queued so far
	Finished  int    `json:"finished"`   // of those, attempts with an outcome
	PerSecond int    `json:"per_second"` // attempts queued per second, per endpoint
}

// Erasure is an erasure (by subject, or of one event) and what it has erased so far.
type Erasure struct {
	ID         int64      `json:"id"`
	Status     string     `json:"status"`   // running, then done once no attempt is in flight
	Subject    *string    `json:"subject"`  // nil for the erasure of one event
	EventID    *string    `json:"event_id"` // nil for an erasure by subject
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// Events whose data, subjects and attempts' responses were erased; Attempts of
	// those; DeadLettered: waiting attempts ended as dead letters (error_kind
	// "erased"); InspectorCopies: Redirect copies whose bodies were erased.
	Events          int `json:"events"`
	Attempts        int `json:"attempts"`
	DeadLettered    int `json:"dead_lettered"`
	InspectorCopies int `json:"inspector_copies"`
}

// EventTypeSchema is an event type's JSON Schema (draft 2020-12) as set: while it is
// set, Events.Send and SendBatch refuse events of the type whose data fails it.
type EventTypeSchema struct {
	Event     string         `json:"event"`   // the event type, e.g. "order.paid"
	Version   int            `json:"version"` // 1 when first set, one more at every change
	UpdatedAt time.Time      `json:"updated_at"`
	Schema    map[string]any `json:"schema"`
}

// Page is one page of a list: resume from NextCursor; fetch again now only if HasMore.
type Page[T any] struct {
	Data       []T
	HasMore    bool
	NextCursor string
}
