# frozen_string_literal: true

require "base64"
require "json"
require "openssl"

module Posthorn
  # Verifying a delivery: one call, both signature schemes, constant-time comparison.
  #
  # Posthorn signs every attempt twice: Standard Webhooks (`webhook-id`,
  # `webhook-timestamp`, `webhook-signature: v1,<base64>`) and its own
  # `X-Botix-Signature: sha256=<hex>` with `X-Botix-Timestamp`. Either is enough; the
  # Standard Webhooks one is checked when present. An endpoint with the ed25519 scheme
  # signs `v1a,<base64>` (Standard Webhooks only), checked with its `whpk_` public key
  # by the OpenSSL that Ruby links (1.1.1 or later), so no gem is needed.
  module Webhook
    DEFAULT_TOLERANCE = 300
    STANDARD = %w[webhook-id webhook-timestamp webhook-signature].freeze
    BOTIX = %w[x-botix-signature x-botix-timestamp].freeze
    PUBLIC_KEY_PREFIX = "whpk_"
    SECRET_PREFIX = "whsec_"
    ED25519_KEY_LENGTH = 32
    ED25519_SIGNATURE_LENGTH = 64
    # The DER header of an ed25519 SubjectPublicKeyInfo (RFC 8410): the raw key follows.
    # OpenSSL reads keys as DER; Ruby 3.1's openssl has no raw-key constructor.
    ED25519_SPKI_PREFIX = ["302a300506032b6570032100"].pack("H*").freeze
    # Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
    MAX_SIGNATURES = 16
    MAX_HEADER_LENGTH = 4096

    module_function

    # Checks a delivery and returns its parsed JSON body (a Hash with string keys).
    #
    # +payload+ is the raw request body exactly as received (never re-serialised JSON);
    # +headers+ a Hash (a Rack env's `HTTP_WEBHOOK_ID` keys work too) or pairs, names
    # matched case-insensitively; +secret+ the endpoint's `whsec_…` secret, or the
    # `whpk_…` public key of an endpoint with the ed25519 scheme (then only `v1a`
    # signatures count). Raises a WebhookVerificationError subclass when the delivery is
    # not genuine, and ArgumentError for a secret or key that cannot be one.
    def verify(payload, headers, secret, tolerance = DEFAULT_TOLERANCE, now: nil)
      body = payload.to_s.b
      # A bad public key is a setup mistake: raised whatever the headers are.
      public_key = secret.start_with?(PUBLIC_KEY_PREFIX) ? ed25519_key(secret) : nil
      h = normalize_headers(headers)
      now ||= Time.now.to_f
      matched =
        if STANDARD.all? { |name| h[name] }
          verify_standard(h, body, secret, public_key, now, tolerance)
        elsif !public_key && BOTIX.all? { |name| h[name] }
          verify_botix(h, body, secret, now, tolerance)
        else
          raise MissingHeadersError, "missing header #{missing(h, public_key).join(", ")}"
        end
      raise InvalidSignatureError, "no signature matches the body and the #{public_key ? "public key" : "secret"}" unless matched

      begin
        JSON.parse(body.force_encoding(Encoding::UTF_8))
      rescue JSON::ParserError => e
        raise WebhookVerificationError, "the body is not JSON: #{e.message}"
      end
    end

    # The headers Posthorn would send for +payload+: for tests of your receiver.
    def sign(secret, msg_id, timestamp, payload)
      body = payload.to_s.b
      standard = hmac(standard_key(secret), "#{msg_id}.#{timestamp}.".b + body)
      botix = hmac(secret.b, "#{timestamp}.".b + body)
      {
        "webhook-id" => msg_id,
        "webhook-timestamp" => timestamp.to_s,
        "webhook-signature" => "v1,#{Base64.strict_encode64(standard)}",
        "X-Botix-Signature" => "sha256=#{botix.unpack1("H*")}",
        "X-Botix-Timestamp" => timestamp.to_s
      }
    end

    def verify_standard(h, body, secret, public_key, now, tolerance)
      msg_id, stamp, header = STANDARD.map { |name| header(h, name) }
      check_timestamp(stamp, now, tolerance)
      content = "#{msg_id}.#{stamp}.".b + body
      if public_key
        # Nothing secret is involved, so stopping at the first match leaks nothing.
        standard_signatures(header, "v1a", ED25519_SIGNATURE_LENGTH).any? do |sig|
          public_key.verify(nil, sig, content)
        rescue OpenSSL::PKey::PKeyError
          false
        end
      else
        any_equal?(standard_signatures(header, "v1"), hmac(standard_key(secret), content))
      end
    end

    def verify_botix(h, body, secret, now, tolerance)
      header, stamp = BOTIX.map { |name| header(h, name) }
      check_timestamp(stamp, now, tolerance)
      any_equal?(botix_signatures(header), hmac(secret.b, "#{stamp}.".b + body))
    end

    # Names what is missing from the scheme the sender started on, else from both.
    def missing(h, public_key)
      # X-Botix signatures are HMACs only: a public key cannot check them.
      schemes = public_key ? [STANDARD] : [STANDARD, BOTIX]
      started = schemes.select { |scheme| scheme.any? { |name| h[name] } }
      (started.empty? ? schemes : started).flatten.reject { |name| h[name] }
    end

    # Lower-case names with blank values left out. A Rack env's `HTTP_WEBHOOK_ID` is read
    # as `webhook-id`, so `env` itself can be passed.
    def normalize_headers(headers)
      pairs = headers.respond_to?(:each_pair) ? headers.each_pair : headers.each
      pairs.each_with_object({}) do |(name, value), out|
        value = value.join(", ") if value.is_a?(Array)
        next unless value.is_a?(String)

        name = name.to_s.downcase
        name = name.delete_prefix("http_").tr("_", "-") if name.start_with?("http_")
        value = value.strip
        out[name] = value unless value.empty?
      end
    end

    def header(h, name)
      value = h.fetch(name)
      raise WebhookVerificationError, "header #{name} is too long" if value.bytesize > MAX_HEADER_LENGTH

      value
    end

    def check_timestamp(stamp, now, tolerance)
      raise InvalidTimestampError, "timestamp `#{stamp[0, 20]}` is not Unix seconds" unless stamp.match?(/\A\d{1,12}\z/)

      age = now - Integer(stamp, 10)
      if age > tolerance
        raise InvalidTimestampError, "timestamp is #{age.to_i} s old, more than the tolerance of #{tolerance} s"
      end
      return unless -age > tolerance

      raise InvalidTimestampError, "timestamp is #{-age.to_i} s in the future, more than the tolerance of #{tolerance} s"
    end

    def standard_key(secret)
      decode64(secret.delete_prefix(SECRET_PREFIX)) ||
        raise(ArgumentError, "the secret is not a whsec_ secret (base64 after the prefix)")
    end

    def ed25519_key(key)
      raw = decode64(key.delete_prefix(PUBLIC_KEY_PREFIX))
      unless raw&.bytesize == ED25519_KEY_LENGTH
        raise ArgumentError, "the key is not a whpk_ public key (base64 of 32 bytes after the prefix)"
      end

      OpenSSL::PKey.read(ED25519_SPKI_PREFIX + raw)
    end

    def decode64(text)
      Base64.strict_decode64(text)
    rescue ArgumentError
      nil
    end

    def hmac(key, message)
      OpenSSL::HMAC.digest("SHA256", key, message)
    end

    # Every candidate is compared, so the time taken does not tell which one was close.
    def any_equal?(candidates, expected)
      candidates.reduce(false) do |matched, candidate|
        same = candidate.bytesize == expected.bytesize &&
               OpenSSL.fixed_length_secure_compare(candidate, expected)
        matched | same
      end
    end

    # `<version>,<base64>` entries separated by spaces; other versions, and signatures of
    # another +length+ when one is given, are skipped.
    def standard_signatures(header, version, length = nil)
      header.split.first(MAX_SIGNATURES).filter_map do |entry|
        found, sig = entry.split(",", 2)
        next unless found == version && sig

        decoded = decode64(sig)
        decoded if decoded && (length.nil? || decoded.bytesize == length)
      end
    end

    # `sha256=<hex>` entries separated by commas (two while a rotated secret is valid).
    def botix_signatures(header)
      header.split(",").first(MAX_SIGNATURES).filter_map do |entry|
        scheme, sig = entry.strip.split("=", 2)
        [sig].pack("H*") if scheme == "sha256" && sig&.match?(/\A(?:\h\h)+\z/)
      end
    end

    private_class_method :verify_standard, :verify_botix, :missing, :normalize_headers, :header,
                         :check_timestamp, :standard_key, :ed25519_key, :decode64, :hmac,
                         :any_equal?, :standard_signatures, :botix_signatures
  end
end
