package posthorn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Operator calls /operator/v1, the API of the platform that runs Posthorn for its
// customers (one project each): their projects, the projects' API keys, usage and
// portal links. It takes an operator key (pho_…, made by `posthorn create-operator-key
// --name N`) and retries as Client does; creating a project, a key or a portal link is
// never repeated on a 5xx.
type Operator struct {
	Projects    *Projects
	APIKeys     *APIKeys
	Usage       *UsageReports
	PortalLinks *PortalLinks
}

// NewOperator makes an operator client. With an empty key every call returns ErrNoKey.
func NewOperator(operatorKey string, opts ...Option) *Operator {
	t := newTransport(operatorKey, "/operator/v1", opts)
	return &Operator{&Projects{t}, &APIKeys{t}, &UsageReports{t}, &PortalLinks{t}}
}

// EffectiveLimits are every limit's value for a project: the default, the plan's or the
// operator's override.
type EffectiveLimits struct {
	Endpoints             int `json:"endpoints"`
	APIKeys               int `json:"api_keys"`
	Members               int `json:"members"`
	EventTypesPerEndpoint int `json:"event_types_per_endpoint"`
	ConcurrentReplays     int `json:"concurrent_replays"`
	DataDepth             int `json:"data_depth"`
	ConcurrentErasures    int `json:"concurrent_erasures"`
	APIRequestsPerMinute  int `json:"api_requests_per_minute"`
	RetentionDays         int `json:"retention_days"`
}

// Brand is what the portal shows instead of Posthorn's look; nil: not set.
type Brand struct {
	Name    *string `json:"name"`
	Accent  *string `json:"accent"`
	LogoURL *string `json:"logo_url"`
}

// Project is one of the operator's customers.
type Project struct {
	ID     int64           `json:"id"`
	Name   string          `json:"name"`
	Plan   string          `json:"plan"`
	Limits EffectiveLimits `json:"limits"`
	// FrameAncestors are the origins that may frame the project's portal pages.
	FrameAncestors []string `json:"frame_ancestors"`
	Brand          Brand    `json:"brand"`
	// TracePropagation: attempts carry W3C trace context to the project's receivers.
	TracePropagation bool      `json:"trace_propagation"`
	CreatedAt        time.Time `json:"created_at"`
	// UID is the operator's own id for this customer.
	UID *string `json:"uid"`
}

// CreatedKey is a project's new public API key; Key (phk_…) is shown this once.
type CreatedKey struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	Key       string    `json:"key"`
	CreatedAt time.Time `json:"created_at"`
}

// AttemptCounts are attempts by how they ended.
type AttemptCounts struct {
	Succeeded  int64 `json:"succeeded"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"dead_letter"`
}

// UsageDay is one UTC day's use.
type UsageDay struct {
	Day      Date          `json:"day"`
	Events   int64         `json:"events"`
	Attempts AttemptCounts `json:"attempts"`
}

// Usage is what a project used from Since to Until (UTC days, both included): events
// accepted, attempts finished by how they ended, and the days that saw any use,
// oldest first.
type Usage struct {
	ProjectID int64         `json:"project_id"`
	Since     Date          `json:"since"`
	Until     Date          `json:"until"`
	Events    int64         `json:"events"`
	Attempts  AttemptCounts `json:"attempts"`
	Days      []UsageDay    `json:"days"`
}

// PortalLink is single-use: opening URL signs the browser into the project's portal.
type PortalLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Date is a calendar day, as the API writes it: "2026-11-30".
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf is the day of t in t's location.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{y, m, d}
}

// IsZero says whether d is the zero Date (no day).
func (d Date) IsZero() bool { return d == Date{} }

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// MarshalJSON writes "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads "YYYY-MM-DD".
func (d *Date) UnmarshalJSON(raw []byte) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return err
	}
	*d = DateOf(t)
	return nil
}

// LimitOverrides are the operator's overrides of a project's limits, each from 1 to its
// ceiling; 0 leaves a limit as it is.
type LimitOverrides struct {
	Endpoints             int `json:"endpoints,omitempty"`
	APIKeys               int `json:"api_keys,omitempty"`
	Members               int `json:"members,omitempty"`
	EventTypesPerEndpoint int `json:"event_types_per_endpoint,omitempty"`
	ConcurrentReplays     int `json:"concurrent_replays,omitempty"`
	DataDepth             int `json:"data_depth,omitempty"`
	// ConcurrentErasures: erasures by subject running at once (1 to 100).
	ConcurrentErasures int `json:"concurrent_erasures,omitempty"`
	// APIRequestsPerMinute: public API requests per key per minute, instead of the plan's.
	APIRequestsPerMinute int `json:"api_requests_per_minute,omitempty"`
	// RetentionDays: days of delivery history kept, at most the server's.
	RetentionDays int `json:"retention_days,omitempty"`
}

// BrandIn is the portal's brand: a name shown instead of the project's, an accent colour
// ("#rrggbb") and an https logo.
type BrandIn struct {
	Name    string `json:"name,omitempty"`
	Accent  string `json:"accent,omitempty"`
	LogoURL string `json:"logo_url,omitempty"`
}

// ProjectParams are a project's fields for Projects.Create (Name required) and
// Projects.Update, where only the fields set change: Limits, FrameAncestors and Brand
// each replace the old value whole, and a non-nil empty FrameAncestors lets no site
// frame the portal.
type ProjectParams struct {
	Name string `json:"name,omitempty"`
	// UID is the operator's own id for the customer, unique among live projects.
	UID string `json:"uid,omitempty"`
	// Plan is "trial" (the default) or "business".
	Plan   string          `json:"plan,omitempty"`
	Limits *LimitOverrides `json:"limits,omitempty"`
	// FrameAncestors are origins ("https://host[:port]") that may frame the portal.
	FrameAncestors []string `json:"frame_ancestors"`
	Brand          *BrandIn `json:"brand,omitempty"`
	// TracePropagation passes W3C trace context on to the receivers (nil: unchanged,
	// true when made).
	TracePropagation *bool `json:"trace_propagation,omitempty"`
}

func (p ProjectParams) body() map[string]any {
	raw, _ := json.Marshal(p) // plain strings, numbers and slices: cannot fail
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	if p.FrameAncestors == nil { // absent, unlike [] which empties it
		delete(body, "frame_ancestors")
	}
	return body
}

// Projects is /projects: the operator's customers, one project each.
type Projects struct{ t *transport }

// Create makes a project. A UID already taken is an APIError 409 "conflict". Not
// retried on 5xx: a repeat could make two.
func (s *Projects) Create(ctx context.Context, p ProjectParams) (*Project, error) {
	return doJSON[Project](ctx, s.t, call{method: "POST", path: "/projects", body: p.body()})
}

// ProjectListParams select live projects; UID finds the one with that id.
type ProjectListParams struct {
	Cursor string
	Limit  int // 1 to 200 (the server's default, 50, when 0; 100 for Iter)
	UID    string
}

// List returns one page of live projects, oldest first.
func (s *Projects) List(ctx context.Context, p ProjectListParams) (*Page[Project], error) {
	var out struct {
		Data       []Project `json:"data"`
		NextCursor string    `json:"next_cursor"`
		HasMore    bool      `json:"has_more"`
	}
	query := queryOf("cursor", p.Cursor, "limit", p.Limit, "uid", p.UID)
	if _, err := s.t.do(ctx, call{method: "GET", path: "/projects", query: query, retrySafe: true}, &out); err != nil {
		return nil, err
	}
	return &Page[Project]{Data: out.Data, HasMore: out.HasMore, NextCursor: out.NextCursor}, nil
}

// Iter walks every live project from p.Cursor (or the beginning) on, each exactly once.
func (s *Projects) Iter(ctx context.Context, p ProjectListParams) *Iterator[Project] {
	return iterate(ctx, p, s.List)
}

func (p *ProjectListParams) paging() (cursor *string, limit *int) { return &p.Cursor, &p.Limit }

// Find returns the live project that carries the operator's id uid, or nil.
func (s *Projects) Find(ctx context.Context, uid string) (*Project, error) {
	page, err := s.List(ctx, ProjectListParams{UID: uid, Limit: 1})
	if err != nil || len(page.Data) == 0 {
		return nil, err
	}
	return &page.Data[0], nil
}

// Get returns one project.
func (s *Projects) Get(ctx context.Context, id int64) (*Project, error) {
	return get[Project](ctx, s.t, pathOf("projects", id))
}

// Update changes the fields set in p. Retried like a GET: a repeat leaves the same
// project.
func (s *Projects) Update(ctx context.Context, id int64, p ProjectParams) (*Project, error) {
	return doJSON[Project](ctx, s.t, call{method: "PATCH", path: pathOf("projects", id), body: p.body(), retrySafe: true})
}

// Delete makes the project gone at once: its id answers 404, its keys and portal
// sessions stop working; its data is purged in the background.
func (s *Projects) Delete(ctx context.Context, id int64) error {
	_, err := s.t.do(ctx, call{method: "DELETE", path: pathOf("projects", id), retrySafe: true}, nil)
	return err
}

// APIKeys is /projects/{id}/api-keys: the projects' public API keys.
type APIKeys struct{ t *transport }

// Create mints a public API key (phk_…) for the project; Key is shown this once. Not
// retried on 5xx: a repeat would mint a second key.
func (s *APIKeys) Create(ctx context.Context, projectID int64, name string) (*CreatedKey, error) {
	return doJSON[CreatedKey](ctx, s.t, call{
		method: "POST", path: pathOf("projects", projectID, "api-keys"), body: map[string]string{"name": name},
	})
}

// Revoke stops the key at once (the public API answers it 401); a repeat is harmless.
func (s *APIKeys) Revoke(ctx context.Context, projectID, keyID int64) error {
	_, err := s.t.do(ctx, call{method: "DELETE", path: pathOf("projects", projectID, "api-keys", keyID), retrySafe: true}, nil)
	return err
}

// UsageReports is /projects/{id}/usage: what a project used per UTC day, for billing.
type UsageReports struct{ t *transport }

// Get returns usage from since to until, both UTC days included. Zero dates take the
// defaults: until today, since 29 days before it; at most 400 days are counted.
func (s *UsageReports) Get(ctx context.Context, projectID int64, since, until Date) (*Usage, error) {
	return doJSON[Usage](ctx, s.t, call{
		method: "GET", path: pathOf("projects", projectID, "usage"),
		query: queryOf("since", since, "until", until), retrySafe: true,
	})
}

// PortalLinks is /projects/{id}/portal-links: single-use sign-ins to a project's portal.
type PortalLinks struct{ t *transport }

// PortalLinkParams say whom a portal link signs in: one of the operator's users (UserID,
// with Email and Name if given) as "owner", "member" or "viewer", and for how long the
// link stays valid (1 s to 1 h; 5 minutes when 0).
type PortalLinkParams struct {
	UserID    string
	Email     string
	Name      string
	Role      string
	ExpiresIn time.Duration
}

// Create makes a portal link. Not retried on 5xx.
func (s *PortalLinks) Create(ctx context.Context, projectID int64, p PortalLinkParams) (*PortalLink, error) {
	user := map[string]string{"id": p.UserID}
	if p.Email != "" {
		user["email"] = p.Email
	}
	if p.Name != "" {
		user["name"] = p.Name
	}
	body := map[string]any{"user": user, "role": p.Role}
	if p.ExpiresIn > 0 {
		body["expires_in"] = int64(p.ExpiresIn / time.Second)
	}
	return doJSON[PortalLink](ctx, s.t, call{method: "POST", path: pathOf("projects", projectID, "portal-links"), body: body})
}
