package posthorn

import "context"

// ListenOpen is a listen session to open. Forward is required; the rest is optional.
type ListenOpen struct {
	// Forward is the local receiver's URL, where the CLI sends the deliveries.
	Forward string `json:"forward"`
	// Events are the event types sent to it, or ["*"] (the default) for all.
	Events []string `json:"events,omitempty"`
	// Name names the session (^[A-Za-z0-9._-]{1,64}$): opening it again with the same
	// name reattaches to it (the same endpoint, the same secret, the attempts that
	// waited). Unnamed, it ends when its CLI exits.
	Name string `json:"name,omitempty"`
	// Filter is a CEL filter, as an endpoint's.
	Filter string `json:"filter,omitempty"`
}

// Listen is /listen: the listen sessions of `posthorn listen`, which forwards a
// project's deliveries to a receiver on the CLI's machine. The CLI is the usual way to
// use them; Open is what it calls first.
type Listen struct{ t *transport }

// Open opens a listen session (answered 201), or reattaches to the project's live
// session of o.Name (200, Reattached true). A project holds at most 5, each counting as
// an endpoint; Webhooks.Delete ends one. Retried on 5xx only with a Name: a named open
// is idempotent, a repeated unnamed one would make a second session.
func (s *Listen) Open(ctx context.Context, o ListenOpen) (*ListenSession, error) {
	return doJSON[ListenSession](ctx, s.t, call{method: "POST", path: "/listen", body: o, retrySafe: o.Name != ""})
}
