package posthorn

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a delivery's timestamp may be from now, either way.
const DefaultTolerance = 5 * time.Minute

const (
	secretPrefix    = "whsec_"
	publicKeyPrefix = "whpk_"
	// Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
	maxSignatures   = 16
	maxHeaderLength = 4096
)

var (
	// ErrVerification is wrapped by every error Verify returns for a delivery that
	// cannot be trusted; the errors below say which check failed.
	ErrVerification = errors.New("posthorn: webhook verification failed")
	// ErrMissingHeaders: neither scheme's headers are all present.
	ErrMissingHeaders = fmt.Errorf("%w: missing headers", ErrVerification)
	// ErrInvalidTimestamp: the timestamp is not Unix seconds, or is outside the tolerance.
	ErrInvalidTimestamp = fmt.Errorf("%w: invalid timestamp", ErrVerification)
	// ErrInvalidSignature: no signature in the headers matches the body and the key.
	ErrInvalidSignature = fmt.Errorf("%w: invalid signature", ErrVerification)
	// ErrInvalidKey is a setup mistake rather than a bad delivery: the secret is not
	// whsec_ and base64, or the public key not whpk_ and base64 of 32 bytes. It does
	// not wrap ErrVerification, so a receiver does not answer it as a forged request.
	ErrInvalidKey = errors.New("posthorn: invalid secret or public key")
)

// VerificationError is the error Verify returns for a delivery that cannot be trusted.
// errors.Is(err, ErrVerification) holds for all of them, and errors.Is with
// ErrMissingHeaders, ErrInvalidTimestamp or ErrInvalidSignature tells them apart.
type VerificationError struct {
	// Reason says why, in words fit for a log or a 400 answer.
	Reason string
	kind   error
}

func (e *VerificationError) Error() string { return "posthorn: " + e.Reason }

// Unwrap returns the sentinel of the check that failed.
func (e *VerificationError) Unwrap() error { return e.kind }

func failure(kind error, format string, args ...any) error {
	return &VerificationError{Reason: fmt.Sprintf(format, args...), kind: kind}
}

// VerifyOption changes how Verify checks a delivery.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	tolerance time.Duration
	now       time.Time
}

// WithTolerance sets how far the timestamp may be from now (DefaultTolerance otherwise).
func WithTolerance(d time.Duration) VerifyOption {
	return func(c *verifyConfig) { c.tolerance = d }
}

// WithNow checks the timestamp against t instead of the clock: for tests.
func WithNow(t time.Time) VerifyOption {
	return func(c *verifyConfig) { c.now = t }
}

var (
	standardHeaders = []string{"webhook-id", "webhook-timestamp", "webhook-signature"}
	botixHeaders    = []string{"x-botix-signature", "x-botix-timestamp"}
)

// Verify checks a delivery and returns its parsed JSON body.
//
// payload is the raw request body exactly as received (never re-serialised JSON);
// headers are the request's (names matched case-insensitively, also in a header map
// built by hand); secret is the endpoint's whsec_ secret, or the whpk_ public key of an
// endpoint with the ed25519 scheme (then only v1a signatures count). Posthorn signs each
// attempt both the Standard Webhooks way (webhook-id, webhook-timestamp,
// webhook-signature "v1,<base64>", several during a secret rotation) and with
// X-Botix-Signature/X-Botix-Timestamp; either is enough. Signatures are compared in
// constant time and the timestamp must be within the tolerance (5 minutes) either way.
//
// A delivery that cannot be trusted is a *VerificationError wrapping ErrVerification; a
// malformed secret or key is an error wrapping ErrInvalidKey.
func Verify(payload []byte, headers http.Header, secret string, opts ...VerifyOption) (map[string]any, error) {
	cfg := verifyConfig{tolerance: DefaultTolerance}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.now.IsZero() {
		cfg.now = time.Now()
	}
	// A bad key is reported whatever the headers are: it is a mistake in the setup.
	var publicKey ed25519.PublicKey
	if strings.HasPrefix(secret, publicKeyPrefix) {
		var err error
		if publicKey, err = parsePublicKey(secret); err != nil {
			return nil, err
		}
	}
	h := lowerHeaders(headers)
	var matched bool
	switch {
	case allPresent(h, standardHeaders):
		msgID, stamp, header := h["webhook-id"], h["webhook-timestamp"], h["webhook-signature"]
		if err := checkLengths(h, standardHeaders); err != nil {
			return nil, err
		}
		if err := checkTimestamp(stamp, cfg); err != nil {
			return nil, err
		}
		content := append([]byte(msgID+"."+stamp+"."), payload...)
		if publicKey != nil {
			// Nothing secret is involved, so stopping at the first match leaks nothing.
			for _, sig := range standardSignatures(header, "v1a", ed25519.SignatureSize) {
				if ed25519.Verify(publicKey, content, sig) {
					matched = true
					break
				}
			}
		} else {
			key, err := standardKey(secret)
			if err != nil {
				return nil, err
			}
			matched = anyEqual(standardSignatures(header, "v1", 0), hmacSHA256(key, content))
		}
	case publicKey == nil && allPresent(h, botixHeaders):
		// X-Botix signatures are HMACs only: a public key cannot check them.
		if err := checkLengths(h, botixHeaders); err != nil {
			return nil, err
		}
		stamp := h["x-botix-timestamp"]
		if err := checkTimestamp(stamp, cfg); err != nil {
			return nil, err
		}
		content := append([]byte(stamp+"."), payload...)
		matched = anyEqual(botixSignatures(h["x-botix-signature"]), hmacSHA256([]byte(secret), content))
	default:
		return nil, missingHeaders(h, publicKey != nil)
	}
	if !matched {
		kind := "secret"
		if publicKey != nil {
			kind = "public key"
		}
		return nil, failure(ErrInvalidSignature, "no signature matches the body and the %s", kind)
	}
	var event map[string]any
	if err := json.Unmarshal(payload, &event); err != nil {
		return nil, failure(ErrVerification, "the body is not a JSON object: %v", err)
	}
	return event, nil
}

// missingHeaders names what is missing from the scheme the sender started on, else from
// every scheme the key can check.
func missingHeaders(h map[string]string, publicKey bool) error {
	schemes := [][]string{standardHeaders, botixHeaders}
	if publicKey {
		schemes = schemes[:1]
	}
	var started [][]string
	for _, s := range schemes {
		for _, name := range s {
			if h[name] != "" {
				started = append(started, s)
				break
			}
		}
	}
	if len(started) == 0 {
		started = schemes
	}
	var missing []string
	for _, s := range started {
		for _, name := range s {
			if h[name] == "" {
				missing = append(missing, name)
			}
		}
	}
	return failure(ErrMissingHeaders, "missing header %s", strings.Join(missing, ", "))
}

// Sign returns the headers Posthorn would send with payload, both schemes: for tests of
// a receiver.
func Sign(secret, msgID string, timestamp int64, payload []byte) (http.Header, error) {
	key, err := standardKey(secret)
	if err != nil {
		return nil, err
	}
	stamp := strconv.FormatInt(timestamp, 10)
	standard := hmacSHA256(key, append([]byte(msgID+"."+stamp+"."), payload...))
	botix := hmacSHA256([]byte(secret), append([]byte(stamp+"."), payload...))
	h := http.Header{}
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", stamp)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(standard))
	h.Set("X-Botix-Signature", "sha256="+hex.EncodeToString(botix))
	h.Set("X-Botix-Timestamp", stamp)
	return h, nil
}

// lowerHeaders flattens headers to one value per lower-case name (several joined with
// ", ", as HTTP does), dropping empty ones.
func lowerHeaders(headers http.Header) map[string]string {
	out := make(map[string]string, len(headers))
	for name, values := range headers {
		value := strings.TrimSpace(strings.Join(values, ", "))
		if value == "" {
			continue
		}
		name = strings.ToLower(name)
		if prev, ok := out[name]; ok {
			value = prev + ", " + value
		}
		out[name] = value
	}
	return out
}

func allPresent(h map[string]string, names []string) bool {
	for _, name := range names {
		if h[name] == "" {
			return false
		}
	}
	return true
}

func checkLengths(h map[string]string, names []string) error {
	for _, name := range names {
		if len(h[name]) > maxHeaderLength {
			return failure(ErrVerification, "header %s is too long", name)
		}
	}
	return nil
}

func checkTimestamp(stamp string, cfg verifyConfig) error {
	if !isDigits(stamp) || len(stamp) > 12 {
		shown := stamp
		if len(shown) > 20 {
			shown = shown[:20]
		}
		return failure(ErrInvalidTimestamp, "timestamp `%s` is not Unix seconds", shown)
	}
	seconds, _ := strconv.ParseInt(stamp, 10, 64)
	age := cfg.now.Sub(time.Unix(seconds, 0))
	tolerance := int64(cfg.tolerance / time.Second)
	if age > cfg.tolerance {
		return failure(ErrInvalidTimestamp,
			"timestamp is %d s old, more than the tolerance of %d s", int64(age/time.Second), tolerance)
	}
	if -age > cfg.tolerance {
		return failure(ErrInvalidTimestamp,
			"timestamp is %d s in the future, more than the tolerance of %d s", int64(-age/time.Second), tolerance)
	}
	return nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// standardKey is the HMAC key of the Standard Webhooks scheme: the base64 after whsec_.
func standardKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: the secret is not a whsec_ secret (base64 after the prefix)", ErrInvalidKey)
	}
	return key, nil
}

func parsePublicKey(key string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(key, publicKeyPrefix))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: the key is not a whpk_ public key (base64 of 32 bytes after the prefix)", ErrInvalidKey)
	}
	return ed25519.PublicKey(raw), nil
}

func hmacSHA256(key, message []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(message)
	return mac.Sum(nil)
}

// anyEqual compares every candidate, so the time taken does not tell which one was close.
func anyEqual(candidates [][]byte, expected []byte) bool {
	matched := 0
	for _, candidate := range candidates {
		matched |= boolInt(hmac.Equal(candidate, expected))
	}
	return matched == 1
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// standardSignatures reads "<version>,<base64>" entries separated by spaces; entries of
// other versions, and of another decoded length when length is not 0, are skipped.
func standardSignatures(header, version string, length int) [][]byte {
	var out [][]byte
	for i, entry := range strings.Fields(header) {
		if i == maxSignatures {
			break
		}
		found, sig, _ := strings.Cut(entry, ",")
		if found != version {
			continue
		}
		decoded, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || (length != 0 && len(decoded) != length) {
			continue
		}
		out = append(out, decoded)
	}
	return out
}

// botixSignatures reads "sha256=<hex>" entries separated by commas (two while a rotated
// secret is still valid).
func botixSignatures(header string) [][]byte {
	var out [][]byte
	for i, entry := range strings.Split(header, ",") {
		if i == maxSignatures {
			break
		}
		scheme, sig, _ := strings.Cut(strings.TrimSpace(entry), "=")
		if scheme != "sha256" {
			continue
		}
		if decoded, err := hex.DecodeString(sig); err == nil {
			out = append(out, decoded)
		}
	}
	return out
}
