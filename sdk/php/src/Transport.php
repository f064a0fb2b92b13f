<?php

declare(strict_types=1);

namespace Posthorn;

/** One HTTP exchange with the API, repeated as RetryPolicy decides (ext-curl). */
final class Transport
{
    // A list page of 200 deliveries is far below this; anything larger is not the API.
    private const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
    // Sent a little after the reset second so the server's clock has surely moved on.
    private const RESET_MARGIN = 0.05;

    /** @var callable(float): void */
    public $sleep;
    /** @var (callable(Attempt): void)|null */
    public $onResponse;
    // The last rate-limit headers seen; shared by every call on this client.
    private ?int $remaining = null;
    private ?float $reset = null;

    public function __construct(
        private readonly string $apiKey,
        private readonly string $baseUrl,
        public readonly float $timeout,
        public readonly RetryPolicy $policy,
        private readonly string $userAgent,
        ?callable $onResponse = null,
    ) {
        $this->onResponse = $onResponse;
        $this->sleep = static function (float $seconds): void {
            usleep((int) round($seconds * 1_000_000));
        };
    }

    /**
     * @param array<string, scalar|null> $query
     * @param array<string, string> $headers
     * @param bool $retrySafe whether a 5xx or a connection error may be retried (429s always are)
     * @param float|null $timeout seconds for this call's attempts instead of the client's
     * @param bool $associative JSON objects of the answer as arrays (false: as \stdClass)
     */
    public function request(string $method, string $path, array $query = [], mixed $body = null, array $headers = [], bool $retrySafe = true, ?float $timeout = null, bool $associative = true): mixed
    {
        $query = array_filter($query, static fn ($v) => $v !== null);
        $url = $this->baseUrl . $path . ($query ? '?' . http_build_query($query, '', '&', PHP_QUERY_RFC3986) : '');
        $lines = [
            'Authorization: Bearer ' . $this->apiKey,
            'Accept: application/json',
            'User-Agent: ' . $this->userAgent,
        ];
        foreach ($headers as $name => $value) {
            $lines[] = "{$name}: {$value}";
        }
        $data = null;
        if ($body !== null) {
            $data = json_encode($body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
            $lines[] = 'Content-Type: application/json';
        }
        for ($retry = 0; ; $retry++) {
            $this->waitForQuota();
            $sentAt = microtime(true);
            try {
                [$status, $respHeaders, $text] = $this->send($method, $url, $lines, $data, $timeout ?? $this->timeout);
            } catch (ApiConnectionError $e) {
                $this->log($method, $path, $retry, $sentAt, null, []);
                if ($retrySafe && $retry < $this->policy->maxRetries) {
                    ($this->sleep)($this->policy->backoff($retry));
                    continue;
                }
                throw new ApiConnectionError("{$method} {$path}: " . $e->getMessage(), 0, $e);
            }
            $this->noteQuota($respHeaders);
            $this->log($method, $path, $retry, $sentAt, $status, $respHeaders);
            if ($status >= 200 && $status < 300) {
                return trim($text) === '' ? null : json_decode($text, $associative, 512, JSON_THROW_ON_ERROR);
            }
            [$code, $message] = self::errorOf($status, $text);
            if ($status === 429) {
                $after = RetryPolicy::parseRetryAfter($respHeaders['retry-after'] ?? null, microtime(true));
                $wait = $this->policy->retryWait(429, $retry, $after);
                if ($retry >= $this->policy->maxRetries || $wait > $this->policy->maxWait) {
                    throw new RateLimitError($status, $code, $message, $respHeaders, $after);
                }
                ($this->sleep)($wait);
                continue;
            }
            if ($status >= 500 && $retrySafe && $retry < $this->policy->maxRetries) {
                ($this->sleep)($this->policy->backoff($retry));
                continue;
            }
            throw new ApiError($status, $code, $message, $respHeaders);
        }
    }

    /** @return array{int, array<string, string>, string} */
    private function send(string $method, string $url, array $lines, ?string $data, float $timeout): array
    {
        $headers = [];
        $body = '';
        $ch = curl_init($url);
        curl_setopt_array($ch, [
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_HTTPHEADER => $lines,
            CURLOPT_TIMEOUT_MS => (int) ($timeout * 1000),
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_HEADERFUNCTION => static function ($ch, string $line) use (&$headers): int {
                $parts = explode(':', $line, 2);
                if (count($parts) === 2) {
                    $headers[strtolower(trim($parts[0]))] = trim($parts[1]);
                }
                return strlen($line);
            },
            CURLOPT_WRITEFUNCTION => static function ($ch, string $chunk) use (&$body): int {
                $body .= $chunk;
                // Returning less than given makes curl abort the transfer.
                return strlen($body) > self::MAX_RESPONSE_BYTES ? 0 : strlen($chunk);
            },
        ]);
        if ($data !== null) {
            curl_setopt($ch, CURLOPT_POSTFIELDS, $data);
        }
        $ok = curl_exec($ch);
        $status = (int) curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
        $error = curl_error($ch);
        curl_close($ch);
        if ($ok === false || $status === 0) {
            throw new ApiConnectionError($error ?: 'no answer');
        }
        return [$status, $headers, $body];
    }

    /** Proactive: with the quota (nearly) spent, sleep until the minute resets. */
    private function waitForQuota(): void
    {
        if ($this->remaining === null || $this->reset === null || $this->remaining >= $this->policy->rateLimitThreshold) {
            return;
        }
        $wait = $this->reset - microtime(true) + self::RESET_MARGIN;
        if ($wait > 0) {
            ($this->sleep)(min($wait, $this->policy->maxWait));
        }
    }

    private function noteQuota(array $headers): void
    {
        $remaining = $headers['x-ratelimit-remaining'] ?? null;
        $reset = $headers['x-ratelimit-reset'] ?? null;
        if (is_numeric($remaining) && is_numeric($reset)) {
            $this->remaining = (int) $remaining;
            $this->reset = (float) $reset;
        }
    }

    private function log(string $method, string $path, int $retry, float $sentAt, ?int $status, array $headers): void
    {
        if ($this->onResponse !== null) {
            ($this->onResponse)(new Attempt($method, $path, $retry, $sentAt, microtime(true), $status, $headers));
        }
    }

    /** The API's `{"error": {"code", "message"}}`, or something readable from a proxy. */
    private static function errorOf(int $status, string $text): array
    {
        $json = json_decode($text, true);
        if (is_array($json) && isset($json['error']['code'])) {
            return [(string) $json['error']['code'], (string) ($json['error']['message'] ?? '')];
        }
        return ["http_{$status}", trim(substr($text, 0, 200)) ?: "HTTP {$status}"];
    }
}
