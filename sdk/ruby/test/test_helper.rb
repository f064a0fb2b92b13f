# frozen_string_literal: true

# Shared by the suite. The server tests need a running `posthorn serve`, API keys and an
# operator key, given by sdk/test.sh in the environment; without them they are skipped,
# unless POSTHORN_REQUIRE_SERVER=1 (as in test.sh), when they fail.
require "base64"
require "json"
require "minitest/autorun"
require "net/http"
require "securerandom"
require "socket"
require "stringio"
require "posthorn"
require_relative "support/http_receiver"

module TestHelper
  module_function

  def env(test, name)
    value = ENV.fetch(name, "")
    return value unless value.empty?

    test.flunk("#{name} is not set") if ENV["POSTHORN_REQUIRE_SERVER"] == "1"
    test.skip("#{name} is not set: run sdk/test.sh for the server tests")
  end

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def wait_for(what, timeout: 30.0, interval: 0.2)
    deadline = Time.now + timeout
    while Time.now < deadline
      value = yield
      return value if value

      sleep interval
    end
    raise Minitest::Assertion, "timed out waiting for #{what}"
  end

  # The OpenAPI document at +path+ (no key needed), fetched once per run.
  def openapi(base_url, path)
    @openapi ||= {}
    @openapi[path] ||= JSON.parse(Net::HTTP.get(URI("#{base_url}#{path}")))
  end

  def unique(prefix)
    "#{prefix}-#{SecureRandom.hex(6)}"
  end
end

# Assertions and accessors the server tests share.
module ServerTestHelpers
  def base_url = TestHelper.env(self, "POSTHORN_TEST_URL")
  def business_key = TestHelper.env(self, "POSTHORN_TEST_KEY_BUSINESS")
  def operator_key = TestHelper.env(self, "POSTHORN_OPERATOR_KEY")

  def client(key = business_key, **options)
    Posthorn::Client.new(key, base_url: base_url, **options)
  end

  def operator(key = operator_key)
    Posthorn::Operator.new(key, base_url: base_url)
  end

  def wait_for(what, **options, &check)
    TestHelper.wait_for(what, **options, &check)
  end

  # Asserts that the block raises ApiError with +status+ and +code+; answers the error.
  def assert_api_error(status, code, &call)
    error = assert_raises(Posthorn::ApiError, &call)
    assert_equal [status, code], [error.status, error.code], error.message
    error
  end
end
