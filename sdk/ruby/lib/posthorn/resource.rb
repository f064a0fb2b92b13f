# frozen_string_literal: true

require "time"

module Posthorn
  DEFAULT_BASE_URL = "http://127.0.0.1:3000"

  # Marks an argument that was not given, where nil means something (remove, unlimited).
  UNSET = Object.new.tap { |o| o.define_singleton_method(:inspect) { "UNSET" } }.freeze

  # The transport of a client of one API (`/public/v1` or `/operator/v1`) under
  # +base_url+ (or POSTHORN_BASE_URL, or the local default).
  def self.transport_for(key, base_url, api_path, timeout:, on_response:, **policy)
    raise ArgumentError, "a key is required" if key.nil? || key.empty?

    base = (base_url || ENV["POSTHORN_BASE_URL"] || DEFAULT_BASE_URL).chomp("/")
    base += api_path unless base.end_with?(api_path)
    Transport.new(key, base, timeout: timeout, policy: RetryPolicy.new(**policy),
                             user_agent: "posthorn-ruby/#{VERSION}", on_response: on_response)
  end

  # One resource of an API (`client.webhooks`, …): the calls share its transport.
  class Resource
    def initialize(transport)
      @t = transport
    end

    private

    # The call's answer as +model+ (nil when the answer is empty), or as parsed JSON.
    def call(method, path, model = nil, retry_safe:, **options)
      data = @t.request(method, path, retry_safe: retry_safe, **options)
      model && data ? model.from_json(data) : data
    end

    # `/a/b/c`, each part percent-encoded (ids and event types go into paths).
    def path(*parts)
      parts.map { |part| "/#{part.to_s.b.gsub(/[^A-Za-z0-9\-._~]/n) { |c| format("%%%02X", c.ord) }}" }.join
    end

    # The body without the options that were not given.
    def given(**values)
      values.reject { |_, v| v.equal?(UNSET) }
    end

    # An RFC 3339 time for the API: a String as given, a Time (or DateTime) in UTC.
    def time_param(value)
      return value if value.nil? || value.is_a?(String)

      time = value.respond_to?(:to_time) ? value.to_time.getutc : value
      time.iso8601(time.subsec.zero? ? 0 : 6)
    end

    # A public API list page: `{"data": [...], "meta": {"next_cursor", "has_more"}}`.
    def page(path, query, model)
      body = @t.request("GET", path, query: query, retry_safe: true)
      meta = body.fetch("meta")
      Page.new(data: body.fetch("data").map { |item| model.from_json(item) },
               has_more: meta.fetch("has_more") == true, next_cursor: meta.fetch("next_cursor"))
    end
  end
end
