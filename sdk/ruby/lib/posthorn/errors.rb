# frozen_string_literal: true

module Posthorn
  # Base of every error the API clients raise. Verification errors are apart
  # (WebhookVerificationError): a receiver rescues those alone.
  class Error < StandardError; end

  # The API answered with an error: `{"error": {"code", "message"}}` and its status.
  class ApiError < Error
    attr_reader :status, :code, :headers

    def initialize(status, code, message, headers = {})
      super("#{status} #{code}: #{message}")
      @status = status
      @code = code
      @api_message = message
      @headers = headers
    end

    # The API's own message, without the status and code that #message starts with.
    def api_message
      @api_message
    end
  end

  # A 429 the client gave up on (retries spent, or a wait longer than max_wait).
  class RateLimitError < ApiError
    # Seconds the server asked to wait (Retry-After), or nil.
    attr_reader :retry_after

    def initialize(status, code, message, headers = {}, retry_after = nil)
      super(status, code, message, headers)
      @retry_after = retry_after
    end
  end

  # No answer: connection refused or reset, DNS failure, or timeout.
  class ApiConnectionError < Error; end

  # The delivery cannot be trusted; #reason says why.
  class WebhookVerificationError < StandardError
    attr_reader :reason

    def initialize(reason)
      super
      @reason = reason
    end
  end

  # No signature in the headers matches the body and the secret.
  class InvalidSignatureError < WebhookVerificationError; end

  # The timestamp is not a number, or further than the tolerance from now.
  class InvalidTimestampError < WebhookVerificationError; end

  # Neither scheme's headers are all present.
  class MissingHeadersError < WebhookVerificationError; end
end
