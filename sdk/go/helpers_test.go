package posthorn

import (
	"net/http"
	"os"
	"testing"
)

// env reads a variable sdk/test.sh exports: without it the test is skipped, unless
// POSTHORN_REQUIRE_SERVER=1 (as in test.sh), when it fails.
func env(t *testing.T, name string) string {
	t.Helper()
	value := os.Getenv(name)
	if value == "" {
		if os.Getenv("POSTHORN_REQUIRE_SERVER") == "1" {
			t.Fatalf("%s is not set", name)
		}
		t.Skipf("%s is not set: run sdk/test.sh for the server tests", name)
	}
	return value
}

// header builds an http.Header from name, value pairs.
func header(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(pairs); i += 2 {
		h.Add(pairs[i], pairs[i+1])
	}
	return h
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustSign(t *testing.T, secret, msgID string, stamp int64, body []byte) http.Header {
	t.Helper()
	h, err := Sign(secret, msgID, stamp, body)
	ok(t, err)
	return h
}
