# frozen_string_literal: true

require_relative "test_helper"

# Posthorn::Webhook.verify: the SPEC.md test vectors, every error, and the deliveries the
# `standardwebhooks` reference package signed (POSTHORN_SWH_FIXTURES, written by test.sh).
class WebhookTest < Minitest::Test
  SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
  MSG_ID = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk"
  STAMP = 1_649_367_553
  BODY = '{"email":"test@example.com","username":"test_user"}'
  STANDARD = {
    "webhook-id" => MSG_ID,
    "webhook-timestamp" => STAMP.to_s,
    "webhook-signature" => "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="
  }.freeze
  BOTIX = {
    "X-Botix-Signature" => "sha256=996637d7f89ef8f7b59f7faaf5341457472e823d8ca666d16b7bbd1dc831721d",
    "X-Botix-Timestamp" => STAMP.to_s
  }.freeze
  PARSED = { "email" => "test@example.com", "username" => "test_user" }.freeze

  def verify(headers, body: BODY, secret: SECRET, tolerance: 300, now: STAMP)
    Posthorn::Webhook.verify(body, headers, secret, tolerance, now: now)
  end

  def assert_refused(error_class, pattern, &call)
    error = assert_raises(Posthorn::WebhookVerificationError, &call)
    assert_instance_of error_class, error
    assert_match pattern, error.reason
  end

  def test_the_standard_webhooks_vector_verifies
    assert_equal PARSED, verify(STANDARD)
  end

  def test_the_botix_vector_verifies
    assert_equal PARSED, verify(BOTIX)
  end

  def test_sign_reproduces_both_vectors
    headers = Posthorn::Webhook.sign(SECRET, MSG_ID, STAMP, BODY)
    assert_equal STANDARD["webhook-signature"], headers["webhook-signature"]
    assert_equal BOTIX["X-Botix-Signature"], headers["X-Botix-Signature"]
  end

  def test_headers_are_matched_case_insensitively_in_any_shape
    assert_equal PARSED, verify(STANDARD.transform_keys(&:upcase))
    assert_equal PARSED, verify(BOTIX.to_a)
    assert_equal PARSED, verify(STANDARD.transform_values { |v| [v] }, body: BODY.b)
    assert_equal PARSED, verify(STANDARD.transform_keys(&:to_sym))
    # A Rack env, as Rack, Sinatra and Rails hand it over, with its other entries.
    rack = STANDARD.to_h { |k, v| ["HTTP_#{k.upcase.tr("-", "_")}", v] }
    assert_equal PARSED, verify(rack.merge("rack.input" => StringIO.new(BODY), "REQUEST_METHOD" => "POST"))
  end

  def test_any_of_several_signatures_may_match_during_a_rotation
    standard = STANDARD.merge("webhook-signature" => "v1,AAAA v1a,xyz #{STANDARD["webhook-signature"]}")
    assert_equal PARSED, verify(standard)
    botix = BOTIX.merge("X-Botix-Signature" => "sha256=#{"00" * 32}, #{BOTIX["X-Botix-Signature"]}")
    assert_equal PARSED, verify(botix)
  end

  def test_the_timestamp_window_is_five_minutes_each_way_by_default
    assert_equal PARSED, Posthorn::Webhook.verify(BODY, STANDARD, SECRET, now: STAMP + 300)
    assert_equal PARSED, Posthorn::Webhook.verify(BODY, STANDARD, SECRET, now: STAMP - 300)
    assert_refused(Posthorn::InvalidTimestampError, /old/) { verify(STANDARD, now: STAMP + 301) }
    assert_refused(Posthorn::InvalidTimestampError, /future/) { verify(BOTIX, now: STAMP - 301) }
    assert_equal PARSED, verify(BOTIX, tolerance: 10_000, now: STAMP + 5000)
    # Without `now:` the clock is read: the 2022 vector is long out of the window.
    assert_refused(Posthorn::InvalidTimestampError, /old/) { Posthorn::Webhook.verify(BODY, STANDARD, SECRET) }
  end

  def test_a_timestamp_that_is_not_unix_seconds_is_refused
    ["soon", "-5", "1649367553.5", "9" * 40].each do |bad|
      assert_refused(Posthorn::InvalidTimestampError, /Unix seconds/) do
        verify(STANDARD.merge("webhook-timestamp" => bad))
      end
    end
  end

  def test_a_tampered_body_wrong_secret_or_garbled_signature_is_a_bad_signature
    other = "whsec_#{Base64.strict_encode64("k" * 32)}"
    [
      [STANDARD, BODY.sub("test_user", "evil_user"), SECRET],
      [BOTIX, BODY, other],
      [STANDARD.merge("webhook-signature" => "v1,not-base64!!"), BODY, SECRET],
      [BOTIX.merge("X-Botix-Signature" => "md5=abcd"), BODY, SECRET],
      [BOTIX.merge("X-Botix-Signature" => "sha256=zz"), BODY, SECRET],
      # The id is signed too: a replay under another id fails.
      [STANDARD.merge("webhook-id" => "msg_other"), BODY, SECRET]
    ].each do |headers, body, secret|
      assert_refused(Posthorn::InvalidSignatureError, /no signature matches the body and the secret/) do
        verify(headers, body: body, secret: secret)
      end
    end
  end

  def test_missing_headers_are_named
    assert_refused(Posthorn::MissingHeadersError, /webhook-id/) { verify({}) }
    assert_refused(Posthorn::MissingHeadersError, /\Amissing header webhook-timestamp\z/) do
      verify(STANDARD.reject { |k, _| k == "webhook-timestamp" })
    end
    assert_refused(Posthorn::MissingHeadersError, /x-botix-timestamp/) do
      verify(BOTIX.slice("X-Botix-Signature"))
    end
    assert_refused(Posthorn::MissingHeadersError, /webhook-signature/) do
      verify(STANDARD.merge("webhook-signature" => "  "))
    end
  end

  def test_every_error_is_a_webhook_verification_error_with_a_reason
    [Posthorn::InvalidSignatureError, Posthorn::InvalidTimestampError, Posthorn::MissingHeadersError].each do |cls|
      assert_operator cls, :<, Posthorn::WebhookVerificationError
    end
    error = assert_raises(Posthorn::WebhookVerificationError) { Posthorn::Webhook.verify(BODY, {}, SECRET) }
    refute_empty error.reason
    assert_equal error.reason, error.message
  end

  def test_a_body_that_is_not_json_is_refused_after_its_signature
    body = "not json"
    headers = Posthorn::Webhook.sign(SECRET, MSG_ID, STAMP, body)
    assert_refused(Posthorn::WebhookVerificationError, /not JSON/) { verify(headers, body: body) }
  end

  def test_a_header_past_four_kilobytes_is_refused
    long = STANDARD.merge("webhook-signature" => "v1,#{"A" * 5000}")
    assert_refused(Posthorn::WebhookVerificationError, /too long/) { verify(long) }
  end

  def test_a_secret_that_is_not_whsec_base64_is_a_programming_error
    assert_raises(ArgumentError) { verify(STANDARD, secret: "whsec_???") }
  end

  def test_random_secrets_round_trip_through_sign
    20.times do
      secret = "whsec_#{Base64.strict_encode64(SecureRandom.bytes(32))}"
      body = JSON.generate("n" => SecureRandom.hex(4), "ü" => "ß")
      headers = Posthorn::Webhook.sign(secret, "evt_x", Time.now.to_i, body)
      assert_equal JSON.parse(body), Posthorn::Webhook.verify(body, headers, secret)
      standard_only = headers.select { |k, _| k.start_with?("webhook-") }
      assert_equal JSON.parse(body), Posthorn::Webhook.verify(body, standard_only, secret)
    end
  end

  def test_deliveries_signed_by_the_standardwebhooks_package_verify
    cases = JSON.parse(File.read(TestHelper.env(self, "POSTHORN_SWH_FIXTURES")))
    assert_operator cases.size, :>=, 10
    cases.each do |c|
      parsed = Posthorn::Webhook.verify(c["body"], c["headers"], c["secret"], 300, now: c["timestamp"])
      assert_equal JSON.parse(c["body"]), parsed
    end
    # A rotation: the reference package's signatures under two secrets, either verifies.
    refute_empty(cases.select { |c| c["rotation"] })
  end
end
