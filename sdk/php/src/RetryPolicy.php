<?php

declare(strict_types=1);

namespace Posthorn;

/**
 * When to try a request again and how long to wait: pure functions, no I/O.
 *
 * Shared by all Posthorn client libraries: on 429 wait the larger of `Retry-After` and an
 * exponential backoff with jitter; on 5xx and connection errors retry only requests that
 * are safe to repeat; never retry other 4xx; wait for the minute's reset ahead of time
 * when `X-RateLimit-Remaining` runs low.
 */
final class RetryPolicy
{
    public function __construct(
        /** Retries after the first attempt (so at most maxRetries + 1 requests). */
        public readonly int $maxRetries = 5,
        /** First backoff step, seconds; doubles with each retry up to backoffCap. */
        public readonly float $backoffBase = 0.5,
        public readonly float $backoffCap = 30.0,
        /** Longest single wait the client accepts; a longer Retry-After throws instead. */
        public readonly float $maxWait = 120.0,
        /** Wait for X-RateLimit-Reset once X-RateLimit-Remaining falls below this (1: only
         *  when the minute's quota is spent; 0: never wait ahead of time). */
        public readonly int $rateLimitThreshold = 1,
    ) {
    }

    /**
     * Seconds before retry number `$retry` (0-based): half the capped exponential step
     * fixed, half random ("equal jitter"), so clients spread out but never hammer.
     */
    public function backoff(int $retry, ?callable $rand = null): float
    {
        $rand ??= static fn (): float => mt_rand() / mt_getrandmax();
        $step = min($this->backoffCap, $this->backoffBase * 2 ** min($retry, 32));
        return $step / 2 + $rand() * $step / 2;
    }

    /** The wait before retrying: after a 429 the larger of Retry-After and the backoff. */
    public function retryWait(?int $status, int $retry, ?float $retryAfter, ?callable $rand = null): float
    {
        $wait = $this->backoff($retry, $rand);
        return $status === 429 && $retryAfter !== null ? max($wait, $retryAfter) : $wait;
    }

    /** `Retry-After` as seconds from `$now`: delta-seconds or an HTTP-date; null if unreadable. */
    public static function parseRetryAfter(?string $value, float $now): ?float
    {
        if ($value === null) {
            return null;
        }
        $value = trim($value);
        if (preg_match('/^\d+$/', $value)) {
            return (float) min((int) substr($value, 0, 10), 1_000_000_000);
        }
        $when = \DateTimeImmutable::createFromFormat(DATE_RFC7231, $value, new \DateTimeZone('UTC'));
        if ($when === false) {
            return null;
        }
        return max(0.0, $when->getTimestamp() - $now);
    }
}
