package posthorn

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	edMsgID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	edStamp = 1764950400
	edBody  = `{"event":"order.paid","data":{"order":42,"note":"Grüße €"}}`
	// Made once by the Python suite's cryptography package; every library holds the
	// same values, so they agree on the signed bytes. The seed is the private key:
	// ed25519 signing is deterministic, so the signature can be made again here.
	vectorSeed         = "1G/dyz1Usx6eVnmVuZcCbPefEpAOgWJOdsTQcKAc94Q="
	vectorPublicKey    = "whpk_x8CAWZvvp73vP3kQ4oVcputXzz2C5C+saNN0AHq/PGU="
	vectorEdSignatures = "v1a,UIDhEnf/wmVVw09YYzEjiVY0kvvohzmx7ud3JLBeozSGtIwFUfi55t6ZFFvDVB8KqrJL7M5R1UFFjA3tFzo6AQ=="
)

func newKey(t *testing.T) ed25519.PrivateKey {
	_, private, err := ed25519.GenerateKey(rand.Reader)
	ok(t, err)
	return private
}

func whpk(private ed25519.PrivateKey) string {
	return "whpk_" + base64.StdEncoding.EncodeToString(private.Public().(ed25519.PublicKey))
}

func v1a(private ed25519.PrivateKey, msgID string, stamp int64, body string) string {
	message := msgID + "." + strconv.FormatInt(stamp, 10) + "." + body
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(private, []byte(message)))
}

func edHeaders(signature, msgID string, stamp int64) http.Header {
	return header("webhook-id", msgID, "webhook-timestamp", strconv.FormatInt(stamp, 10), "webhook-signature", signature)
}

func TestAV1aSignatureVerifiesWithThePublicKey(t *testing.T) {
	private := newKey(t)
	h := edHeaders(v1a(private, edMsgID, edStamp, edBody), edMsgID, edStamp)
	wantVerified(t, edBody, h, whpk(private), at(edStamp))
	wantVerified(t, edBody, h, whpk(private), at(edStamp+300))
}

func TestDuringASwitchOfSchemeEachKeyPicksItsOwnEntries(t *testing.T) {
	private := newKey(t)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32)))
	signed := mustSign(t, secret, edMsgID, edStamp, []byte(edBody)).Get("webhook-signature")
	mine := v1a(private, edMsgID, edStamp, edBody)
	wantVerified(t, edBody, edHeaders("v1,AAAA "+mine, edMsgID, edStamp), whpk(private), at(edStamp))
	both := edHeaders(signed+" "+mine, edMsgID, edStamp)
	wantVerified(t, edBody, both, whpk(private), at(edStamp))
	wantVerified(t, edBody, both, secret, at(edStamp))
	// Several v1a entries: any one by the key is enough.
	other := v1a(newKey(t), edMsgID, edStamp, edBody)
	wantVerified(t, edBody, edHeaders(other+" "+mine, edMsgID, edStamp), whpk(private), at(edStamp))
}

func TestATamperedDeliveryOrAnotherKeysSignatureIsABadSignature(t *testing.T) {
	private := newKey(t)
	good := v1a(private, edMsgID, edStamp, edBody)
	refused := []struct {
		body string
		h    http.Header
	}{
		{strings.Replace(edBody, "42", "43", 1), edHeaders(good, edMsgID, edStamp)},
		{edBody, edHeaders(good, "msg_other", edStamp)},
		{edBody, edHeaders(v1a(private, edMsgID, edStamp-1, edBody), edMsgID, edStamp)},
		{edBody, edHeaders(v1a(newKey(t), edMsgID, edStamp, edBody), edMsgID, edStamp)},
		{edBody, edHeaders("v1a,not-base64!!", edMsgID, edStamp)},
		{edBody, edHeaders("v1a,"+base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 32))), edMsgID, edStamp)},
		// A v1 entry, even a valid-looking one, is never checked against a public key.
		{edBody, edHeaders("v1,"+strings.TrimPrefix(good, "v1a,"), edMsgID, edStamp)},
	}
	for _, r := range refused {
		wantRefused(t, ErrInvalidSignature, "no signature matches the body and the public key", r.body, r.h, whpk(private), at(edStamp))
	}
}

func TestTheTimestampWindowAppliesAsWithASecret(t *testing.T) {
	private := newKey(t)
	h := edHeaders(v1a(private, edMsgID, edStamp, edBody), edMsgID, edStamp)
	wantRefused(t, ErrInvalidTimestamp, "old", edBody, h, whpk(private), at(edStamp+301))
	wantRefused(t, ErrInvalidTimestamp, "future", edBody, h, whpk(private), at(edStamp-301))
	wantVerified(t, edBody, h, whpk(private), at(edStamp+5000), WithTolerance(10000*time.Second))
}

func TestAWhsecSecretIgnoresV1aEntries(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32)))
	h := edHeaders(v1a(newKey(t), edMsgID, edStamp, edBody), edMsgID, edStamp)
	wantRefused(t, ErrInvalidSignature, "", edBody, h, secret, at(edStamp))
}

func TestAPublicKeyNeedsTheStandardWebhooksHeaders(t *testing.T) {
	signed := mustSign(t, "whsec_AAAA", edMsgID, edStamp, []byte(edBody))
	botix := header("X-Botix-Signature", signed.Get("X-Botix-Signature"), "X-Botix-Timestamp", signed.Get("X-Botix-Timestamp"))
	_, err := Verify([]byte(edBody), botix, whpk(newKey(t)), at(edStamp))
	if !errors.Is(err, ErrMissingHeaders) || err.Error() != "posthorn: missing header webhook-id, webhook-timestamp, webhook-signature" {
		t.Fatalf("got %v", err)
	}
}

func TestAKeyThatIsNotWhpkBase64Of32BytesIsASetupError(t *testing.T) {
	for _, bad := range []string{
		"whpk_", "whpk_???",
		"whpk_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 31))),
		"whpk_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 33))),
	} {
		_, err := Verify([]byte(edBody), edHeaders("v1a,AAAA", edMsgID, edStamp), bad, at(edStamp))
		if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "whpk_") {
			t.Fatalf("%s: got %v", bad, err)
		}
	}
}

func TestTheSharedEd25519VectorVerifiesAndSigningItAgainGivesTheSameBytes(t *testing.T) {
	wantVerified(t, edBody, edHeaders(vectorEdSignatures, edMsgID, edStamp), vectorPublicKey, at(edStamp))
	seed, err := base64.StdEncoding.DecodeString(vectorSeed)
	ok(t, err)
	private := ed25519.NewKeyFromSeed(seed)
	if whpk(private) != vectorPublicKey || v1a(private, edMsgID, edStamp, edBody) != vectorEdSignatures {
		t.Fatal("the seed does not remake the shared key and signature")
	}
}
