package posthorn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultBaseURL is where a client calls when neither WithBaseURL nor the
	// POSTHORN_BASE_URL variable says otherwise.
	DefaultBaseURL = "http://127.0.0.1:3000"
	// Version is this library's, sent in the User-Agent.
	Version = "0.1.0"
	// A list page of 200 deliveries is far below this; anything larger is not the API.
	maxResponseBytes = 32 << 20
	// Sent a little after the reset second so the server's clock has surely moved on.
	resetMargin = 50 * time.Millisecond
)

// Attempt is what a WithOnResponse hook receives after every HTTP attempt, for logging.
type Attempt struct {
	Method string
	Path   string
	// Retry is 0 for the first try of a call, then 1, 2, …
	Retry int
	// SentAt is just before the request was sent; ReceivedAt when the answer (or the
	// error) came.
	SentAt     time.Time
	ReceivedAt time.Time
	// Status is the HTTP status, or 0 when no answer came.
	Status int
	Header http.Header
}

// Option configures a Client or an Operator.
type Option func(*config)

type config struct {
	baseURL    string
	httpClient *http.Client
	timeout    time.Duration
	policy     RetryPolicy
	onResponse func(Attempt)
}

// WithBaseURL sets the server's URL ("https://posthorn.example.com"); the API's path
// is added unless the URL ends with it.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithHTTPClient sends the requests through hc (its Timeout should be 0: each attempt
// has the client's own timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithTimeout bounds each HTTP attempt (30 s by default).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRetryPolicy replaces DefaultRetryPolicy.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *config) { c.policy = p } }

// WithOnResponse calls hook after every HTTP attempt, from the goroutine that made it.
func WithOnResponse(hook func(Attempt)) Option { return func(c *config) { c.onResponse = hook } }

// ErrNoKey is returned by every call of a client made with an empty key.
var ErrNoKey = errors.New("posthorn: the API key is empty")

type transport struct {
	key        string
	baseURL    string
	http       *http.Client
	timeout    time.Duration
	policy     RetryPolicy
	onResponse func(Attempt)
	// Replaced by the tests: waiting and the time.
	sleep func(context.Context, time.Duration) error
	now   func() time.Time
	// The last rate-limit headers seen, shared by every goroutine using the client.
	mu        sync.Mutex
	seen      bool
	remaining int
	reset     time.Time
}

func newTransport(key, apiPath string, opts []Option) *transport {
	cfg := config{
		baseURL:    os.Getenv("POSTHORN_BASE_URL"),
		httpClient: http.DefaultClient,
		timeout:    30 * time.Second,
		policy:     DefaultRetryPolicy,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.baseURL == "" {
		cfg.baseURL = DefaultBaseURL
	}
	base := strings.TrimRight(cfg.baseURL, "/")
	if !strings.HasSuffix(base, apiPath) {
		base += apiPath
	}
	return &transport{
		key: key, baseURL: base, http: cfg.httpClient, timeout: cfg.timeout,
		policy: cfg.policy, onResponse: cfg.onResponse, sleep: sleepContext, now: time.Now,
	}
}

func sleepContext(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// call is one operation of the API.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	header map[string]string
	// retrySafe: a repeat after a 5xx or a lost answer does no harm.
	retrySafe bool
	timeout   time.Duration // 0: the client's
}

// pathOf joins escaped path segments: pathOf("webhooks", 7) is "/webhooks/7".
func pathOf(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + url.PathEscape(fmt.Sprint(p)))
	}
	return b.String()
}

// do makes the call, repeated as the policy says, and decodes a 2xx JSON answer into
// out (unless out is nil or the answer empty). It returns the final status.
func (t *transport) do(ctx context.Context, c call, out any) (int, error) {
	if t.key == "" {
		return 0, ErrNoKey
	}
	var payload []byte
	if c.body != nil {
		var err error
		if payload, err = json.Marshal(c.body); err != nil {
			return 0, fmt.Errorf("posthorn: %s %s: %w", c.method, c.path, err)
		}
	}
	target := t.baseURL + c.path
	if len(c.query) > 0 {
		target += "?" + c.query.Encode()
	}
	for retry := 0; ; retry++ {
		if err := t.waitForQuota(ctx); err != nil {
			return 0, &ConnectionError{c.method, c.path, err}
		}
		sentAt := t.now()
		status, header, raw, err := t.send(ctx, c, target, payload)
		if err != nil {
			t.log(c, retry, sentAt, 0, nil)
			if c.retrySafe && retry < t.policy.MaxRetries && ctx.Err() == nil {
				if err := t.sleep(ctx, t.policy.Backoff(retry, jitter)); err == nil {
					continue
				}
			}
			return 0, &ConnectionError{c.method, c.path, err}
		}
		t.noteQuota(header)
		t.log(c, retry, sentAt, status, header)
		if status >= 200 && status < 300 {
			if out != nil && len(bytes.TrimSpace(raw)) > 0 {
				if err := json.Unmarshal(raw, out); err != nil {
					return status, fmt.Errorf("posthorn: %s %s: the answer is not what the API sends: %w", c.method, c.path, err)
				}
			}
			return status, nil
		}
		apiErr := errorOf(status, raw, header)
		var wait time.Duration
		switch {
		case status == http.StatusTooManyRequests:
			after, ok := ParseRetryAfter(header.Get("Retry-After"), t.now())
			wait = t.policy.Wait(status, retry, after, jitter)
			if retry >= t.policy.MaxRetries || wait > t.policy.MaxWait {
				if !ok {
					after = 0
				}
				return status, &RateLimitError{APIError: apiErr, RetryAfter: after}
			}
		case status >= 500 && c.retrySafe && retry < t.policy.MaxRetries:
			wait = t.policy.Backoff(retry, jitter)
		default:
			return status, apiErr
		}
		if err := t.sleep(ctx, wait); err != nil {
			return status, &ConnectionError{c.method, c.path, err}
		}
	}
}

// send is one HTTP exchange within the attempt's timeout, the body read whole.
func (t *transport) send(ctx context.Context, c call, target string, payload []byte) (int, http.Header, []byte, error) {
	timeout := t.timeout
	if c.timeout > timeout {
		timeout = c.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, target, body)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "posthorn-go/"+Version)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for name, value := range c.header {
		req.Header.Set(name, value)
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return 0, nil, nil, err
	}
	if len(raw) > maxResponseBytes {
		return 0, nil, nil, fmt.Errorf("response over %d bytes", maxResponseBytes)
	}
	return resp.StatusCode, resp.Header, raw, nil
}

// waitForQuota sleeps until the minute resets when the quota is (nearly) spent.
func (t *transport) waitForQuota(ctx context.Context) error {
	t.mu.Lock()
	var wait time.Duration
	if t.seen && t.remaining < t.policy.RateLimitThreshold {
		wait = t.reset.Sub(t.now()) + resetMargin
	}
	t.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	if wait > t.policy.MaxWait {
		wait = t.policy.MaxWait
	}
	return t.sleep(ctx, wait)
}

func (t *transport) noteQuota(h http.Header) {
	remaining, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, err2 := strconv.ParseFloat(h.Get("X-RateLimit-Reset"), 64)
	if err1 != nil || err2 != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen, t.remaining = true, remaining
	t.reset = time.Unix(0, int64(reset*float64(time.Second)))
}

func (t *transport) log(c call, retry int, sentAt time.Time, status int, h http.Header) {
	if t.onResponse != nil {
		if h == nil {
			h = http.Header{}
		}
		t.onResponse(Attempt{c.method, c.path, retry, sentAt, t.now(), status, h.Clone()})
	}
}

// errorOf reads the API's {"error": {"code", "message"}}, or something readable from a
// proxy in front of it.
func errorOf(status int, raw []byte, h http.Header) *APIError {
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		return &APIError{status, body.Error.Code, body.Error.Message, h}
	}
	text := strings.TrimSpace(string(raw))
	if len(text) > 200 {
		text = text[:200]
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return &APIError{status, "http_" + strconv.Itoa(status), text, h}
}
