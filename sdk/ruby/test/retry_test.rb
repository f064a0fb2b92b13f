# frozen_string_literal: true

require_relative "test_helper"

# The retry rules, as pure arithmetic and against a scripted local HTTP server (the real
# server cannot be made to answer 503 on demand).
class RetryTest < Minitest::Test
  ERR = { error: { code: "internal", message: "internal error" } }.freeze
  HOOK = { id: 1, url: "https://x.test/h", events: ["*"], description: "", enabled: true,
           created_at: "2026-11-30T12:00:00.123456789Z", headers: [] }.freeze
  REPLAY = { id: 7, status: "running", total: 2, queued: 0, finished: 0, per_second: 10 }.freeze
  ERASURE = { id: 9, status: "running", subject: nil, event_id: "evt_1", created_at: "2026-11-30T12:00:00Z",
              finished_at: nil, events: 1, attempts: 2, dead_lettered: 0, inspector_copies: 0 }.freeze
  LIMITED = { error: { code: "rate_limited", message: "slow down" } }.freeze

  # What the scripted server received: [method, path, headers (lower-case names), body].
  Seen = Struct.new(:method, :path, :headers, :body)

  def setup
    @answers = []
    @seen = []
    @server = HttpReceiver.new do |method, path, headers, body|
      @seen << Seen.new(method, path, headers.to_h { |k, v| [k.downcase, v] }, body.empty? ? nil : JSON.parse(body))
      status, answer_headers, answer = @answers.shift
      [status, answer_headers, answer.nil? ? "" : JSON.generate(answer)]
    end
    @sleeps = []
    @client = Posthorn::Client.new("phk_test", base_url: @server.url)
    @client.transport.sleeper = @sleeps.method(:<<) # record waits instead of waiting
  end

  def teardown
    @server.stop
  end

  def calls
    @seen.map { |s| [s.method, s.path] }
  end

  def test_backoff_doubles_with_jitter_and_is_capped
    policy = Posthorn::RetryPolicy.new(backoff_base: 1.0, backoff_cap: 8.0)
    assert_equal [0.5, 1, 2, 4, 4, 4], (0..5).map { |n| policy.backoff(n, -> { 0.0 }) }
    assert_equal [1, 2, 4, 8, 8, 8], (0..5).map { |n| policy.backoff(n, -> { 1.0 }) }
    assert_operator policy.backoff(10_000), :<=, 8.0
    assert_predicate policy, :frozen?
  end

  def test_retry_after_is_read_as_seconds_or_an_http_date
    now = 1_700_000_000.0
    assert_equal 7, Posthorn::RetryPolicy.parse_retry_after("7", now)
    assert_in_delta 42, Posthorn::RetryPolicy.parse_retry_after(Time.at(now + 42).httpdate, now), 1
    assert_equal 0, Posthorn::RetryPolicy.parse_retry_after(Time.at(now - 42).httpdate, now)
    assert_nil Posthorn::RetryPolicy.parse_retry_after("soon", now)
    assert_nil Posthorn::RetryPolicy.parse_retry_after(nil, now)
  end

  def test_a_429_waits_the_larger_of_retry_after_and_the_backoff
    policy = Posthorn::RetryPolicy.new(backoff_base: 1.0, backoff_cap: 30.0)
    assert_equal 10.0, policy.retry_wait(429, 0, 10.0, -> { 1.0 })
    assert_equal 30.0, policy.retry_wait(429, 5, 10.0, -> { 1.0 })
    assert_equal 1.0, policy.retry_wait(503, 0, 10.0, -> { 1.0 }) # Retry-After only counts on 429
  end

  def test_a_get_is_retried_after_5xx
    @answers.push([503, {}, ERR], [500, {}, ERR], [200, {}, HOOK])
    hook = @client.webhooks.get(1)
    assert_equal 1, hook.id
    assert_equal Time.utc(2026, 11, 30, 12, 0, Rational(123_456_789, 1_000_000_000)), hook.created_at
    assert_equal [3, 2], [@seen.size, @sleeps.size]
  end

  def test_creating_a_webhook_is_not_retried_after_5xx
    @answers.push([503, {}, ERR], [201, {}, HOOK])
    error = assert_raises(Posthorn::ApiError) { @client.webhooks.create("https://x.test/h", ["*"]) }
    assert_equal [503, "internal", "internal error", 1], [error.status, error.code, error.api_message, @seen.size]
  end

  def test_recovering_is_not_retried_after_5xx_but_following_and_cancelling_are
    @answers.push([503, {}, ERR], [202, {}, REPLAY])
    error = assert_raises(Posthorn::ApiError) do
      @client.webhooks.recover(1, since: "2026-11-30T12:00:00Z", until: "2026-11-30T13:00:00+01:00")
    end
    assert_equal [503, 1], [error.status, @seen.size]
    assert_equal [%w[POST /public/v1/webhooks/1/recover]], calls
    assert_equal({ "since" => "2026-11-30T12:00:00Z", "until" => "2026-11-30T13:00:00+01:00" }, @seen[0].body)
    # Times go as UTC; no `until` is sent unless given.
    @answers = [[202, {}, REPLAY]]
    @seen.clear
    @client.webhooks.recover(1, since: Time.new(2026, 11, 30, 13, 0, 0, "+01:00"))
    assert_equal({ "since" => "2026-11-30T12:00:00Z" }, @seen[0].body)
    @answers = [[502, {}, ERR], [200, {}, REPLAY]]
    @seen.clear
    assert_equal 2, @client.replays.get(7).total
    assert_equal 2, @seen.size
    @answers = [[500, {}, ERR], [200, {}, REPLAY.merge(status: "cancelled")]]
    @seen.clear
    assert_equal "cancelled", @client.replays.cancel(7).status
    assert_equal [%w[POST /public/v1/replays/7/cancel]] * 2, calls
  end

  def test_an_unnamed_listen_open_is_not_retried_after_5xx_but_a_named_one_is
    session = { endpoint: HOOK, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                connect_path: "/public/v1/listen/1/connect", reattached: true }
    @answers.push([503, {}, ERR], [201, {}, session])
    error = assert_raises(Posthorn::ApiError) { @client.listen.open("http://localhost:8000/webhooks") }
    assert_equal [503, [%w[POST /public/v1/listen]]], [error.status, calls]
    assert_equal({ "forward" => "http://localhost:8000/webhooks" }, @seen[0].body) # nothing else unless given
    @answers = [[503, {}, ERR], [200, {}, session]]
    @seen.clear
    opened = @client.listen.open("http://localhost:8000/webhooks", events: ["order.paid"], name: "laptop",
                                                                    filter: "data.amount > 1000")
    assert_equal [true, 1, 2], [opened.reattached, opened.endpoint.id, @seen.size]
    assert_equal({ "forward" => "http://localhost:8000/webhooks", "events" => ["order.paid"], "name" => "laptop",
                   "filter" => "data.amount > 1000" }, @seen[1].body)
  end

  def test_sending_an_event_is_retried_with_the_same_idempotency_key
    @answers.push([502, {}, ERR], [202, {}, { id: "evt_1", deliveries: 0 }])
    assert_equal "evt_1", @client.events.send("order.paid", {}).id
    keys = @seen.map { |s| s.headers["idempotency-key"] }.uniq
    assert_equal 2, @seen.size
    assert_equal 1, keys.size
    assert_match(/\Aphk-\h{8}-/, keys.first)
    # One of the caller's own is sent as it is.
    @answers.push([202, {}, { id: "evt_2", deliveries: 0 }])
    @client.events.send("order.paid", { n: 1 }, idempotency_key: "mine", ordering_key: "k", subjects: ["user:1"])
    assert_equal "mine", @seen.last.headers["idempotency-key"]
    assert_equal({ "event" => "order.paid", "data" => { "n" => 1 }, "ordering_key" => "k", "subjects" => ["user:1"] },
                 @seen.last.body)
  end

  def test_erasing_is_retried_for_one_event_but_not_for_a_subject
    # 202: an attempt was still in flight; 204: done.
    @answers.push([503, {}, ERR], [202, {}, ERASURE], [204, {}, nil])
    erasure = @client.events.erase_data("evt_1")
    assert_instance_of Posthorn::Models::Erasure, erasure
    assert_equal [9, nil], [erasure.id, erasure.finished_at]
    assert_nil @client.events.erase_data("evt_1")
    assert_equal [%w[DELETE /public/v1/events/evt_1/data]] * 3, calls
    @answers = [[503, {}, ERR], [202, {}, ERASURE]]
    @seen.clear
    error = assert_raises(Posthorn::ApiError) { @client.erasures.create("user:42") }
    assert_equal [503, 1], [error.status, @seen.size]
  end

  def test_a_batch_is_retried_with_the_same_idempotency_keys
    accepted = { data: [{ id: "evt_1", deliveries: 0 }, { id: "evt_2", deliveries: 1 }] }
    @answers.push([502, {}, ERR], [202, {}, accepted])
    sent = @client.events.send_batch([{ event: "a.b", data: {}, subjects: ["user:1"] },
                                      { "event" => "a.b", "data" => {}, "id" => "mine" }])
    assert_equal %w[evt_1 evt_2], sent.map(&:id)
    first, second = @seen.map(&:body)
    assert_equal first, second
    assert_equal "mine", first["events"][1]["id"]
    refute_empty first["events"][0]["id"]
    assert_equal ["user:1"], first["events"][0]["subjects"]
  end

  def test_other_4xx_are_never_retried
    @answers.push([422, {}, { error: { code: "invalid", message: "url: bad" } }])
    error = assert_raises(Posthorn::ApiError) { @client.webhooks.update(1, url: "nope") }
    assert_equal [422, "invalid", "url: bad", 1], [error.status, error.code, error.api_message, @seen.size]
    assert_equal "422 invalid: url: bad", error.message
  end

  def test_an_answer_that_is_not_the_apis_error_still_raises_api_error
    @answers.push([404, {}, "plain"])
    error = assert_raises(Posthorn::ApiError) { @client.webhooks.get(1) }
    assert_equal [404, "http_404"], [error.status, error.code]
  end

  def test_update_sends_only_what_is_given_and_nil_to_remove
    @answers.push([200, {}, HOOK], [200, {}, HOOK])
    @client.webhooks.update(1, description: "kept")
    @client.webhooks.update(1, filter: nil, client_certificate: nil, rate_limit: nil)
    assert_equal [{ "description" => "kept" }, { "filter" => nil, "client_certificate" => nil, "rate_limit" => nil }],
                 @seen.map(&:body)
  end

  def test_a_429_is_retried_after_retry_after_for_any_call
    @answers.push([429, { "Retry-After" => "3" }, LIMITED], [201, {}, HOOK])
    assert_equal 1, @client.webhooks.create("https://x.test/h", ["*"]).id
    assert_operator @sleeps.first, :>=, 3
  end

  def test_a_retry_after_beyond_max_wait_raises
    @answers.push([429, { "Retry-After" => "3600" }, LIMITED])
    error = assert_raises(Posthorn::RateLimitError) { @client.events.list }
    assert_equal [3600, []], [error.retry_after, @sleeps]
    assert_kind_of Posthorn::ApiError, error
  end

  def test_a_spent_quota_waits_for_the_reset_before_the_next_call
    reset = Time.now.to_i + 20
    @answers.push([200, { "X-RateLimit-Remaining" => "0", "X-RateLimit-Reset" => reset.to_s }, HOOK], [200, {}, HOOK])
    @client.webhooks.get(1)
    assert_empty @sleeps
    @client.webhooks.get(1)
    assert_operator @sleeps.first, :>, 18
    assert_operator @sleeps.first, :<=, 21
  end

  def test_every_attempt_is_reported_to_on_response
    attempts = []
    client = Posthorn::Client.new("phk_test", base_url: @server.url, on_response: attempts.method(:<<))
    client.transport.sleeper = @sleeps.method(:<<)
    @answers.push([503, {}, ERR], [200, { "X-RateLimit-Remaining" => "9" }, HOOK])
    client.webhooks.get(1)
    assert_equal [[0, 503], [1, 200]], attempts.map { |a| [a.retry, a.status] }
    assert_equal ["GET", "/webhooks/1", "9"], [attempts[1].method, attempts[1].path, attempts[1].headers["x-ratelimit-remaining"]]
    assert_operator attempts[1].received_at, :>=, attempts[1].sent_at
  end

  def test_connection_errors_are_retried_for_safe_calls_then_raised
    client = Posthorn::Client.new("phk_test", base_url: "http://127.0.0.1:#{TestHelper.free_port}", max_retries: 2)
    sleeps = []
    client.transport.sleeper = sleeps.method(:<<)
    assert_raises(Posthorn::ApiConnectionError) { client.events.get("evt_1") }
    assert_equal 2, sleeps.size
    sleeps.clear
    error = assert_raises(Posthorn::ApiConnectionError) { client.deliveries.retry(1) }
    assert_empty sleeps
    assert_kind_of Posthorn::Error, error
  end

  def test_ids_and_types_are_escaped_in_paths_and_the_base_url_is_completed
    @answers.push([404, {}, ERR], [200, {}, { type: "object" }])
    assert_raises(Posthorn::ApiError) { @client.events.get("evt/../x y") }
    @client.event_types.get_schema("order.paid")
    assert_equal ["/public/v1/events/evt%2F..%2Fx%20y", "/public/v1/event-types/order.paid/schema"], @seen.map(&:path)
    assert_equal "#{@server.url}/public/v1", Posthorn::Client.new("k", base_url: "#{@server.url}/public/v1/").transport.base_url
    assert_raises(ArgumentError) { Posthorn::Client.new("", base_url: @server.url) }
  end
end
