package posthorn

import (
	"fmt"
	"net/http"
	"time"
)

// APIError is an error answer of the API: its status and its {"error": {"code",
// "message"}} (or, from something in front of the API, "http_<status>" and the text).
type APIError struct {
	Status  int
	Code    string
	Message string
	Header  http.Header
}

func (e *APIError) Error() string {
	return fmt.Sprintf("posthorn: %d %s: %s", e.Status, e.Code, e.Message)
}

// RateLimitError is a 429 the client gave up on: its retries were spent, or the
// Retry-After was longer than the policy's MaxWait. errors.As finds its APIError too.
type RateLimitError struct {
	*APIError
	// RetryAfter is the server's Retry-After; 0 when it sent none.
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%s (retry after %s)", e.APIError.Error(), e.RetryAfter)
}

// Unwrap lets errors.As(err, &apiErr) find the APIError of a RateLimitError.
func (e *RateLimitError) Unwrap() error { return e.APIError }

// ConnectionError is a call that got no answer: connection refused or reset, DNS
// failure, or a timeout. Err is the cause.
type ConnectionError struct {
	Method string
	Path   string
	Err    error
}

func (e *ConnectionError) Error() string {
	return fmt.Sprintf("posthorn: %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }
