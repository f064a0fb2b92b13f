# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "uri"

module Posthorn
  # What on_response hooks receive after every HTTP attempt.
  #
  # retry:: 0 for the first try of a call, then 1, 2, …
  # sent_at, received_at:: wall-clock seconds (Float) before sending and when the
  #                        answer (or the error) came
  # status:: the HTTP status, or nil when no answer came (connection error, timeout)
  # headers:: the answer's headers, names in lower case
  Attempt = Struct.new(:method, :path, :retry, :sent_at, :received_at, :status, :headers, keyword_init: true)

  # One HTTP exchange with the API, repeated as RetryPolicy decides (Net::HTTP, no gems).
  # Shared by every resource of a client and safe to use from several threads.
  class Transport
    # A list page of 200 deliveries is far below this; anything larger is not the API.
    MAX_RESPONSE_BYTES = 32 * 1024 * 1024
    # Sent a little after the reset second so the server's clock has surely moved on.
    RESET_MARGIN = 0.05
    # What "no answer" looks like from Net::HTTP: refused, reset, DNS, TLS, timeouts.
    CONNECTION_ERRORS = [SystemCallError, IOError, SocketError, Timeout::Error, OpenSSL::SSL::SSLError,
                         Net::HTTPBadResponse, Net::ProtocolError].freeze
    METHODS = {
      "GET" => Net::HTTP::Get, "POST" => Net::HTTP::Post, "PUT" => Net::HTTP::Put,
      "PATCH" => Net::HTTP::Patch, "DELETE" => Net::HTTP::Delete
    }.freeze

    attr_reader :base_url, :timeout, :policy
    # Called with each wait in seconds instead of Kernel#sleep (tests record them).
    attr_accessor :sleeper

    def initialize(api_key, base_url, timeout:, policy:, user_agent:, on_response: nil)
      @api_key = api_key
      @base_url = base_url
      @timeout = timeout
      @policy = policy
      @user_agent = user_agent
      @on_response = on_response
      @sleeper = Kernel.method(:sleep)
      # The last rate-limit headers seen; shared by every thread using this client.
      @lock = Mutex.new
      @remaining = nil
      @reset = nil
    end

    # Sends the request, retrying as the policy says, and answers the parsed JSON body
    # (nil for an empty one). +retry_safe+: whether a 5xx or a lost answer may be
    # repeated (GET, PATCH, DELETE, and calls carrying idempotency keys).
    def request(method, path, retry_safe:, query: nil, body: nil, headers: {}, timeout: nil)
      uri = build_uri(path, query)
      retry_count = 0
      loop do
        wait_for_quota
        sent_at = Time.now.to_f
        begin
          status, resp_headers, raw = exchange(method, uri, body, headers, timeout || @timeout)
        rescue *CONNECTION_ERRORS => e
          log(method, path, retry_count, sent_at, nil, {})
          raise ApiConnectionError, "#{method} #{path}: #{e.message}" unless retry_safe && retry_count < @policy.max_retries

          pause(@policy.backoff(retry_count))
          retry_count += 1
          next
        end
        note_quota(resp_headers)
        log(method, path, retry_count, sent_at, status, resp_headers)
        return json_or_nil(raw) if (200..299).cover?(status)

        wait = wait_before_retry(status, retry_count, retry_safe, resp_headers, raw)
        pause(wait)
        retry_count += 1
      end
    end

    private

    def build_uri(path, query)
      uri = URI(@base_url + path)
      params = (query || {}).reject { |_, v| v.nil? }
      uri.query = URI.encode_www_form(params) unless params.empty?
      uri
    end

    def exchange(method, uri, body, headers, timeout)
      req = METHODS.fetch(method).new(uri)
      req["Authorization"] = "Bearer #{@api_key}"
      req["Accept"] = "application/json"
      req["User-Agent"] = @user_agent
      # A POST without a body still goes with an empty one: say what it is (Net::HTTP
      # would otherwise warn and call it a form).
      req["Content-Type"] = "application/json" if req.request_body_permitted?
      req.body = JSON.generate(body) unless body.nil?
      headers.each { |name, value| req[name] = value }
      # Net::HTTP's own retry (max_retries) is off: the policy counts every attempt.
      Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == "https", max_retries: 0,
                                          open_timeout: timeout, read_timeout: timeout, write_timeout: timeout) do |http|
        http.request(req) do |resp|
          return [resp.code.to_i, lower(resp), read_capped(resp)]
        end
      end
    end

    def read_capped(resp)
      raw = +""
      resp.read_body do |chunk|
        raw << chunk
        raise Net::HTTPBadResponse, "response over #{MAX_RESPONSE_BYTES} bytes" if raw.bytesize > MAX_RESPONSE_BYTES
      end
      raw
    end

    # The wait before repeating a call that was answered with an error, or the error.
    def wait_before_retry(status, retry_count, retry_safe, headers, raw)
      code, message = error_of(status, raw)
      if status == 429
        after = RetryPolicy.parse_retry_after(headers["retry-after"], Time.now.to_f)
        wait = @policy.retry_wait(429, retry_count, after)
        return wait if retry_count < @policy.max_retries && wait <= @policy.max_wait

        raise RateLimitError.new(status, code, message, headers, after)
      end
      return @policy.backoff(retry_count) if status >= 500 && retry_safe && retry_count < @policy.max_retries

      raise ApiError.new(status, code, message, headers)
    end

    def pause(seconds)
      @sleeper.call(seconds)
    end

    # Proactive: with the quota (nearly) spent, sleep until the minute resets.
    def wait_for_quota
      wait = @lock.synchronize do
        low = @remaining && @reset && @remaining < @policy.rate_limit_threshold
        low ? @reset - Time.now.to_f + RESET_MARGIN : 0
      end
      pause([wait, @policy.max_wait].min) if wait.positive?
    end

    def note_quota(headers)
      remaining = headers["x-ratelimit-remaining"]&.then { |v| Integer(v, 10, exception: false) }
      reset = headers["x-ratelimit-reset"]&.then { |v| Float(v, exception: false) }
      return unless remaining && reset

      @lock.synchronize { @remaining, @reset = remaining, reset }
    end

    def log(method, path, retry_count, sent_at, status, headers)
      return unless @on_response

      @on_response.call(Attempt.new(method: method, path: path, retry: retry_count, sent_at: sent_at,
                                    received_at: Time.now.to_f, status: status, headers: headers))
    end

    def lower(resp)
      resp.each_header.to_h { |name, value| [name.downcase, value] }
    end

    def json_or_nil(raw)
      raw.strip.empty? ? nil : JSON.parse(raw)
    end

    # The API's `{"error": {"code", "message"}}`, or something readable from a proxy.
    def error_of(status, raw)
      err = JSON.parse(raw).fetch("error")
      [err.fetch("code").to_s, err.fetch("message").to_s]
    rescue JSON::ParserError, KeyError, TypeError, NoMethodError
      text = raw.to_s.byteslice(0, 200).to_s.scrub.strip
      ["http_#{status}", text.empty? ? "error" : text]
    end
  end
end
