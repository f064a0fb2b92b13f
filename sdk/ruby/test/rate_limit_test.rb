# frozen_string_literal: true

require_relative "test_helper"

# Two trial keys (30 requests a minute) against the real server: the rate-limit rules
# hold, and every call still succeeds.
class RateLimitTest < Minitest::Test
  include ServerTestHelpers

  def sixty_calls(key, threshold)
    log = Queue.new
    limited = client(key, rate_limit_threshold: threshold, on_response: log.method(:<<))
    results = Array.new(60) { |n| limited.events.send("rate.test", { n: n }) }
    [results, Array.new(log.size) { log.pop }]
  end

  # After a 429 no request goes out before Retry-After has passed; a proactive client also
  # sends none between a reply that spent the quota and the reset.
  def assert_no_call_before_its_wait(log, proactive)
    log.each_cons(2) do |prev, nxt|
      if prev.status == 429
        assert_operator nxt.sent_at, :>=, prev.received_at + Float(prev.headers["retry-after"]), [prev, nxt].inspect
      end
      if proactive && prev.headers["x-ratelimit-remaining"] == "0"
        assert_operator nxt.sent_at, :>=, Float(prev.headers["x-ratelimit-reset"]), [prev, nxt].inspect
      end
    end
  end

  def test_sixty_calls_on_a_trial_key_all_succeed_and_none_goes_early
    keys = %w[POSTHORN_TEST_KEY_TRIAL_A POSTHORN_TEST_KEY_TRIAL_B].map { |name| TestHelper.env(self, name) }
    # Both at once, on two trial projects: the default client, which waits for the reset
    # when the quota is spent, and one that only reacts to 429s.
    proactive = Thread.new { sixty_calls(keys[0], 1) }
    reactive = Thread.new { sixty_calls(keys[1], 0) }
    (ok_p, log_p), (ok_r, log_r) = proactive.value, reactive.value
    [[ok_p, log_p, true], [ok_r, log_r, false]].each do |ok, log, is_proactive|
      assert_equal 60, ok.map(&:id).uniq.size
      assert_equal 60, log.count { |a| a.status == 202 }
      assert(log.all? { |a| [202, 429].include?(a.status) })
      assert_no_call_before_its_wait(log, is_proactive)
    end
    # Once the default client has seen the quota it never earns a 429 (before that, a key
    # already used this minute may refuse its first call).
    first_ok = log_p.index { |a| a.status == 202 }
    assert_empty log_p[first_ok..].select { |a| a.status == 429 }, "the default client earned a 429"
    refute_empty log_r.select { |a| a.status == 429 }, "60 calls at 30/min must meet a 429"
  end
end
