# frozen_string_literal: true

require_relative "test_helper"

# Posthorn::Webhook.verify with a whpk_ public key: v1a (ed25519) signatures, checked by
# Ruby's OpenSSL, and the vector the other libraries share.
class WebhookEd25519Test < Minitest::Test
  MSG_ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
  STAMP = 1_764_950_400
  BODY = '{"event":"order.paid","data":{"order":42,"note":"Grüße €"}}'
  PARSED = { "event" => "order.paid", "data" => { "order" => 42, "note" => "Grüße €" } }.freeze
  # Made once with the Python package's `cryptography`; the Python, TypeScript and PHP
  # suites hold the same values. The seed is the private key: ed25519 signing is
  # deterministic, so the signature can be made again here.
  VECTOR_SEED = "1G/dyz1Usx6eVnmVuZcCbPefEpAOgWJOdsTQcKAc94Q="
  VECTOR_KEY = "whpk_x8CAWZvvp73vP3kQ4oVcputXzz2C5C+saNN0AHq/PGU="
  VECTOR_SIGNATURE = "v1a,UIDhEnf/wmVVw09YYzEjiVY0kvvohzmx7ud3JLBeozSGtIwFUfi55t6ZFFvDVB8KqrJL7M5R1UFFjA3tFzo6AQ=="
  # The DER header of an ed25519 PKCS #8 private key (RFC 8410): the 32-byte seed follows.
  PKCS8_PREFIX = ["302e020100300506032b657004220420"].pack("H*").freeze

  def setup
    @private = OpenSSL::PKey.generate_key("ED25519")
  end

  def whpk(key)
    "whpk_#{Base64.strict_encode64(key.public_to_der[-32..])}"
  end

  def v1a(key, msg_id: MSG_ID, stamp: STAMP, body: BODY)
    "v1a,#{Base64.strict_encode64(key.sign(nil, "#{msg_id}.#{stamp}.#{body}"))}"
  end

  def headers(signature, msg_id: MSG_ID, stamp: STAMP)
    { "webhook-id" => msg_id, "webhook-timestamp" => stamp.to_s, "webhook-signature" => signature }
  end

  def verify(headers, key, body: BODY, now: STAMP, tolerance: 300)
    Posthorn::Webhook.verify(body, headers, key, tolerance, now: now)
  end

  def test_a_v1a_signature_verifies_with_the_public_key
    assert_equal PARSED, verify(headers(v1a(@private)), whpk(@private))
    assert_equal PARSED, verify(headers(v1a(@private)), whpk(@private), body: BODY.b, now: STAMP + 300)
  end

  def test_during_a_switch_of_scheme_each_key_picks_its_own_entries
    secret = "whsec_#{Base64.strict_encode64("s" * 32)}"
    hmac_entry = Posthorn::Webhook.sign(secret, MSG_ID, STAMP, BODY)["webhook-signature"]
    assert_equal PARSED, verify(headers("v1,AAAA #{v1a(@private)}"), whpk(@private))
    both = headers("#{hmac_entry} #{v1a(@private)}")
    assert_equal PARSED, verify(both, whpk(@private))
    assert_equal PARSED, verify(both, secret)
    # Several v1a entries: any one by the key is enough.
    other = OpenSSL::PKey.generate_key("ED25519")
    assert_equal PARSED, verify(headers("#{v1a(other)} #{v1a(@private)}"), whpk(@private))
  end

  def test_a_tampered_delivery_or_another_keys_signature_is_a_bad_signature
    key = whpk(@private)
    [
      [BODY.sub("42", "43"), headers(v1a(@private))],
      [BODY, headers(v1a(@private), msg_id: "msg_other")],
      [BODY, headers(v1a(@private, stamp: STAMP - 1))],
      [BODY, headers(v1a(OpenSSL::PKey.generate_key("ED25519")))],
      [BODY, headers("v1a,not-base64!!")],
      [BODY, headers("v1a,#{Base64.strict_encode64("x" * 32)}")],
      [BODY, headers("v1a,#{Base64.strict_encode64("x" * 64)}")],
      # A v1 entry, even a valid-looking one, is never checked against a public key.
      [BODY, headers("v1,#{v1a(@private).split(",", 2).last}")]
    ].each do |body, h|
      error = assert_raises(Posthorn::InvalidSignatureError) { verify(h, key, body: body) }
      assert_match(/no signature matches the body and the public key/, error.reason)
    end
  end

  def test_the_timestamp_window_applies_as_with_a_secret
    assert_raises(Posthorn::InvalidTimestampError) { verify(headers(v1a(@private)), whpk(@private), now: STAMP + 301) }
    error = assert_raises(Posthorn::InvalidTimestampError) do
      verify(headers(v1a(@private)), whpk(@private), now: STAMP - 301)
    end
    assert_match(/future/, error.reason)
    assert_equal PARSED, verify(headers(v1a(@private)), whpk(@private), tolerance: 10_000, now: STAMP + 5000)
  end

  def test_a_whsec_secret_ignores_v1a_entries
    secret = "whsec_#{Base64.strict_encode64("s" * 32)}"
    assert_raises(Posthorn::InvalidSignatureError) { verify(headers(v1a(@private)), secret) }
  end

  def test_a_public_key_needs_the_standard_webhooks_headers
    botix = Posthorn::Webhook.sign("whsec_AAAA", MSG_ID, STAMP, BODY).select { |k, _| k.start_with?("X-") }
    error = assert_raises(Posthorn::MissingHeadersError) { verify(botix, whpk(@private)) }
    assert_equal "missing header webhook-id, webhook-timestamp, webhook-signature", error.reason
  end

  def test_a_key_that_is_not_whpk_base64_of_32_bytes_is_a_programming_error
    ["whpk_", "whpk_???", "whpk_#{Base64.strict_encode64("k" * 31)}", "whpk_#{Base64.strict_encode64("k" * 33)}"]
      .each do |bad|
        error = assert_raises(ArgumentError) { verify(headers("v1a,AAAA"), bad) }
        assert_match(/whpk_/, error.message)
      end
  end

  def test_the_shared_vector_verifies_and_signing_it_again_gives_the_same_bytes
    assert_equal PARSED, verify(headers(VECTOR_SIGNATURE), VECTOR_KEY)
    key = OpenSSL::PKey.read(PKCS8_PREFIX + Base64.strict_decode64(VECTOR_SEED))
    assert_equal VECTOR_KEY, whpk(key)
    assert_equal VECTOR_SIGNATURE, v1a(key)
  end
end
