package posthorn

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func businessClient(t *testing.T) *Client {
	return NewClient(env(t, "POSTHORN_TEST_KEY_BUSINESS"), WithBaseURL(env(t, "POSTHORN_TEST_URL")))
}

func operatorClient(t *testing.T) *Operator {
	return NewOperator(env(t, "POSTHORN_OPERATOR_KEY"), WithBaseURL(env(t, "POSTHORN_TEST_URL")))
}

// pairsHeader is the http.Header of a DeliveryDetail's header pairs, those whose names
// start with prefix.
func pairsHeader(pairs [][2]string, prefix string) http.Header {
	h := http.Header{}
	for _, p := range pairs {
		if strings.HasPrefix(strings.ToLower(p[0]), prefix) {
			h.Add(p[0], p[1])
		}
	}
	return h
}

// wantAPIError checks that err is an *APIError with the status and code.
func wantAPIError(t *testing.T, err error, status int, code string) *APIError {
	t.Helper()
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an APIError %d %s, got %v", status, code, err)
	}
	if apiErr.Status != status || apiErr.Code != code {
		t.Fatalf("want %d %s, got %d %s (%s)", status, code, apiErr.Status, apiErr.Code, apiErr.Message)
	}
	return apiErr
}

// waitFor polls check every 200 ms until it answers true, for at most timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if check() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// freePort is a loopback port nothing listens on (as far as anyone can tell).
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ok(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
