package posthorn

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks test vector, as SPEC.md gives it, and its X-Botix signature.
const (
	vectorSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	vectorID     = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk"
	vectorStamp  = 1649367553
	vectorBody   = `{"email":"test@example.com","username":"test_user"}`
	vectorV1     = "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="
	vectorBotix  = "sha256=996637d7f89ef8f7b59f7faaf5341457472e823d8ca666d16b7bbd1dc831721d"
)

var vectorParsed = map[string]any{"email": "test@example.com", "username": "test_user"}

func standardVector() http.Header {
	return header("webhook-id", vectorID, "webhook-timestamp", "1649367553", "webhook-signature", vectorV1)
}

func botixVector() http.Header {
	return header("X-Botix-Signature", vectorBotix, "X-Botix-Timestamp", "1649367553")
}

func at(seconds int64) VerifyOption { return WithNow(time.Unix(seconds, 0)) }

func wantVerified(t *testing.T, body string, h http.Header, secret string, opts ...VerifyOption) {
	t.Helper()
	event, err := Verify([]byte(body), h, secret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	ok(t, json.Unmarshal([]byte(body), &want))
	if !reflect.DeepEqual(event, want) {
		t.Fatalf("got %v, want %v", event, want)
	}
}

// wantRefused checks that Verify fails with kind and, when given, a reason containing
// part.
func wantRefused(t *testing.T, kind error, part string, body string, h http.Header, secret string, opts ...VerifyOption) {
	t.Helper()
	_, err := Verify([]byte(body), h, secret, opts...)
	var verr *VerificationError
	if !errors.Is(err, kind) || !errors.As(err, &verr) || !errors.Is(err, ErrVerification) {
		t.Fatalf("want %v, got %v", kind, err)
	}
	if !strings.Contains(verr.Reason, part) {
		t.Fatalf("reason %q does not contain %q", verr.Reason, part)
	}
}

func TestTheStandardWebhooksAndBotixVectorsVerify(t *testing.T) {
	wantVerified(t, vectorBody, standardVector(), vectorSecret, at(vectorStamp))
	wantVerified(t, vectorBody, botixVector(), vectorSecret, at(vectorStamp))
	event, err := Verify([]byte(vectorBody), standardVector(), vectorSecret, at(vectorStamp))
	if err != nil || !reflect.DeepEqual(event, vectorParsed) {
		t.Fatalf("got %v, %v", event, err)
	}
}

func TestSignReproducesBothVectors(t *testing.T) {
	h := mustSign(t, vectorSecret, vectorID, vectorStamp, []byte(vectorBody))
	if h.Get("webhook-signature") != vectorV1 || h.Get("X-Botix-Signature") != vectorBotix {
		t.Fatalf("got %v", h)
	}
}

func TestHeaderNamesAreMatchedCaseInsensitively(t *testing.T) {
	upper := http.Header{}
	for name, values := range standardVector() {
		upper[strings.ToUpper(name)] = values // a map built by hand, not canonicalised
	}
	wantVerified(t, vectorBody, upper, vectorSecret, at(vectorStamp))
	lower := http.Header{"x-botix-signature": {vectorBotix}, "x-botix-timestamp": {"1649367553"}}
	wantVerified(t, vectorBody, lower, vectorSecret, at(vectorStamp))
}

func TestAnyOfSeveralSignaturesMayMatchDuringARotation(t *testing.T) {
	h := standardVector()
	h.Set("webhook-signature", "v1,AAAA v1a,xyz "+vectorV1)
	wantVerified(t, vectorBody, h, vectorSecret, at(vectorStamp))
	b := botixVector()
	b.Set("X-Botix-Signature", "sha256="+strings.Repeat("00", 32)+", "+vectorBotix)
	wantVerified(t, vectorBody, b, vectorSecret, at(vectorStamp))
}

func TestTheTimestampWindowIsFiveMinutesEachWayByDefault(t *testing.T) {
	wantVerified(t, vectorBody, standardVector(), vectorSecret, at(vectorStamp+300))
	wantVerified(t, vectorBody, standardVector(), vectorSecret, at(vectorStamp-300))
	wantRefused(t, ErrInvalidTimestamp, "old", vectorBody, standardVector(), vectorSecret, at(vectorStamp+301))
	wantRefused(t, ErrInvalidTimestamp, "future", vectorBody, botixVector(), vectorSecret, at(vectorStamp-301))
	wantVerified(t, vectorBody, botixVector(), vectorSecret, at(vectorStamp+5000), WithTolerance(10000*time.Second))
}

func TestATimestampThatIsNotUnixSecondsIsRefused(t *testing.T) {
	for _, bad := range []string{"soon", "-5", "1649367553.5", strings.Repeat("9", 40)} {
		h := standardVector()
		h.Set("webhook-timestamp", bad)
		wantRefused(t, ErrInvalidTimestamp, "not Unix seconds", vectorBody, h, vectorSecret, at(vectorStamp))
	}
}

func TestATamperedBodyOrWrongSecretIsABadSignature(t *testing.T) {
	tampered := strings.Replace(vectorBody, "test_user", "evil_user", 1)
	wantRefused(t, ErrInvalidSignature, "no signature matches the body and the secret", tampered, standardVector(), vectorSecret, at(vectorStamp))
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	wantRefused(t, ErrInvalidSignature, "", vectorBody, botixVector(), other, at(vectorStamp))
	for name, value := range map[string]string{
		"webhook-signature": "v1,not-base64!!",
		"webhook-id":        "msg_other", // the id is signed too: a replay under another id fails
	} {
		h := standardVector()
		h.Set(name, value)
		wantRefused(t, ErrInvalidSignature, "", vectorBody, h, vectorSecret, at(vectorStamp))
	}
	b := botixVector()
	b.Set("X-Botix-Signature", "md5=abcd")
	wantRefused(t, ErrInvalidSignature, "", vectorBody, b, vectorSecret, at(vectorStamp))
}

func TestMissingHeadersAreNamed(t *testing.T) {
	wantRefused(t, ErrMissingHeaders, "webhook-id", vectorBody, http.Header{}, vectorSecret, at(vectorStamp))
	partial := standardVector()
	partial.Del("webhook-timestamp")
	_, err := Verify([]byte(vectorBody), partial, vectorSecret, at(vectorStamp))
	if err == nil || err.Error() != "posthorn: missing header webhook-timestamp" {
		t.Fatalf("got %v", err)
	}
	wantRefused(t, ErrMissingHeaders, "x-botix-timestamp", vectorBody,
		header("X-Botix-Signature", vectorBotix), vectorSecret, at(vectorStamp))
	blank := standardVector()
	blank.Set("webhook-signature", "  ")
	wantRefused(t, ErrMissingHeaders, "webhook-signature", vectorBody, blank, vectorSecret, at(vectorStamp))
}

func TestABodyThatIsNotAJSONObjectIsRefused(t *testing.T) {
	h := mustSign(t, vectorSecret, vectorID, vectorStamp, []byte("[1]"))
	wantRefused(t, ErrVerification, "not a JSON object", "[1]", h, vectorSecret, at(vectorStamp))
}

func TestASecretThatIsNotWhsecBase64IsASetupError(t *testing.T) {
	_, err := Verify([]byte(vectorBody), standardVector(), "whsec_???", at(vectorStamp))
	if !errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrVerification) {
		t.Fatalf("got %v", err)
	}
	if _, err := Sign("whsec_???", vectorID, vectorStamp, nil); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("got %v", err)
	}
}

// swhCase is one delivery signed by the standardwebhooks reference package, as
// sdk/standardwebhooks_fixtures.py writes them.
type swhCase struct {
	Secret    string            `json:"secret"`
	Body      string            `json:"body"`
	Timestamp int64             `json:"timestamp"`
	Rotation  bool              `json:"rotation"`
	Headers   map[string]string `json:"headers"`
}

func TestSignaturesMadeByTheStandardWebhooksPackageVerify(t *testing.T) {
	raw, err := os.ReadFile(env(t, "POSTHORN_SWH_FIXTURES"))
	ok(t, err)
	var cases []swhCase
	ok(t, json.Unmarshal(raw, &cases))
	rotations := 0
	for _, c := range cases {
		h := http.Header{}
		for name, value := range c.Headers {
			h.Set(name, value)
		}
		wantVerified(t, c.Body, h, c.Secret, at(c.Timestamp))
		// And the other way: what Sign makes is the reference package's signature, one
		// of the header's entries during a rotation.
		ours := mustSign(t, c.Secret, c.Headers["webhook-id"], c.Timestamp, []byte(c.Body))
		entries := strings.Fields(c.Headers["webhook-signature"])
		if !contains(entries, ours.Get("webhook-signature")) || (!c.Rotation && len(entries) != 1) {
			t.Fatalf("Sign made %s, the package %v", ours.Get("webhook-signature"), entries)
		}
		if c.Rotation {
			rotations++
		}
	}
	if len(cases) < 12 || rotations != 2 {
		t.Fatalf("%d cases, %d of a rotation: not what the fixtures script writes", len(cases), rotations)
	}
}

func contains(list []string, s string) bool {
	for _, item := range list {
		if item == s {
			return true
		}
	}
	return false
}
