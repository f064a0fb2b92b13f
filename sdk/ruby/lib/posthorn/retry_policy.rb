# frozen_string_literal: true

require "time"

module Posthorn
  # When to try a request again and how long to wait: pure functions, no I/O.
  #
  # Shared by all Posthorn client libraries: on 429 wait the larger of `Retry-After` and
  # an exponential backoff with jitter; on 5xx and connection errors retry only requests
  # that are safe to repeat; never retry other 4xx; wait for the minute's reset ahead of
  # time when `X-RateLimit-Remaining` runs low.
  #
  # max_retries:: retries after the first attempt (so at most max_retries + 1 requests)
  # backoff_base:: first backoff step, seconds; doubles with each retry up to backoff_cap
  # max_wait:: longest single wait accepted; a longer `Retry-After` raises instead
  # rate_limit_threshold:: wait for `X-RateLimit-Reset` once `X-RateLimit-Remaining`
  #                        falls below this (1: when the quota is spent; 0: never)
  RetryPolicy = Struct.new(:max_retries, :backoff_base, :backoff_cap, :max_wait, :rate_limit_threshold,
                           keyword_init: true) do
    def initialize(max_retries: 5, backoff_base: 0.5, backoff_cap: 30.0, max_wait: 120.0, rate_limit_threshold: 1)
      super
      freeze
    end

    # Seconds before retry number +attempt+ (0-based): half the capped exponential step
    # fixed, half random ("equal jitter"), so clients spread out but never hammer.
    def backoff(attempt, rand = Kernel.method(:rand))
      step = [backoff_cap, backoff_base * (2**[attempt, 32].min)].min
      (step / 2.0) + (rand.call * step / 2.0)
    end

    # The wait before retrying: after a 429 the larger of Retry-After and the backoff.
    # Other statuses and connection errors (+status+ nil) wait the backoff alone.
    def retry_wait(status, attempt, retry_after, rand = Kernel.method(:rand))
      wait = backoff(attempt, rand)
      status == 429 && retry_after ? [wait, retry_after].max : wait
    end

    # `Retry-After` as seconds from +now+: delta-seconds or an HTTP-date; nil if absent
    # or unreadable.
    def self.parse_retry_after(value, now)
      return nil if value.nil?

      value = value.strip
      return [Integer(value, 10), 10**9].min.to_f if value.match?(/\A\d+\z/)

      [Time.httpdate(value).to_f - now, 0.0].max
    rescue ArgumentError
      nil
    end
  end
end
