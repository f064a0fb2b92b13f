<?php

declare(strict_types=1);

namespace Posthorn;

/**
 * Verifying a delivery: one call, both signature schemes, constant-time comparison.
 *
 * Posthorn signs every attempt twice: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64>`) and its own `X-Botix-Signature: sha256=<hex>` with
 * `X-Botix-Timestamp`. Either is enough; the Standard Webhooks one is checked when present.
 */
final class Webhook
{
    public const DEFAULT_TOLERANCE = 300;
    // Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
    private const MAX_SIGNATURES = 16;
    private const MAX_HEADER_LENGTH = 4096;
    private const STANDARD = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
    private const BOTIX = ['x-botix-signature', 'x-botix-timestamp'];

    /**
     * Checks a delivery and returns its parsed JSON body (as arrays).
     *
     * @param string $payload the raw request body, e.g. file_get_contents('php://input')
     * @param iterable<string|int, mixed> $headers e.g. getallheaders(), a PSR-7 getHeaders(),
     *        or a list of [name, value] pairs; names are matched case-insensitively
     * @param string $secret the endpoint's `whsec_…` secret
     * @param int|null $now Unix seconds (the clock when null)
     * @throws WebhookVerificationError (a subclass saying which check failed)
     */
    public static function verify(
        string $payload,
        iterable $headers,
        string $secret,
        int $tolerance = self::DEFAULT_TOLERANCE,
        ?int $now = null,
    ): mixed {
        $h = self::lowerHeaders($headers);
        $now ??= time();
        if (self::allPresent($h, self::STANDARD)) {
            [$id, $stamp, $header] = array_map(fn ($n) => self::header($h, $n), self::STANDARD);
            self::checkTimestamp($stamp, $now, $tolerance);
            $expected = hash_hmac('sha256', "{$id}.{$stamp}." . $payload, self::standardKey($secret), true);
            $candidates = self::standardSignatures($header);
        } elseif (self::allPresent($h, self::BOTIX)) {
            [$header, $stamp] = array_map(fn ($n) => self::header($h, $n), self::BOTIX);
            self::checkTimestamp($stamp, $now, $tolerance);
            $expected = hash_hmac('sha256', "{$stamp}." . $payload, $secret, true);
            $candidates = self::botixSignatures($header);
        } else {
            // Name what is missing from the scheme the sender started on, else from both.
            $started = array_filter([self::STANDARD, self::BOTIX], fn ($s) => self::anyPresent($h, $s));
            $names = array_merge(...($started ?: [self::STANDARD, self::BOTIX]));
            $missing = array_values(array_filter($names, fn ($n) => !isset($h[$n])));
            throw new MissingHeadersError('missing header ' . implode(', ', $missing));
        }
        // Every candidate is compared, so the time taken does not tell which one was close.
        $matched = false;
        foreach ($candidates as $candidate) {
            $matched = hash_equals($expected, $candidate) || $matched;
        }
        if (!$matched) {
            throw new InvalidSignatureError('no signature matches the body and the secret');
        }
        try {
            return json_decode($payload, true, 512, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new WebhookVerificationError('the body is not JSON: ' . $e->getMessage());
        }
    }

    /**
     * The headers Posthorn would send for `$payload`: for tests of your receiver.
     *
     * @return array<string, string>
     */
    public static function sign(string $secret, string $msgId, int $timestamp, string $payload): array
    {
        $standard = hash_hmac('sha256', "{$msgId}.{$timestamp}." . $payload, self::standardKey($secret), true);
        return [
            'webhook-id' => $msgId,
            'webhook-timestamp' => (string) $timestamp,
            'webhook-signature' => 'v1,' . base64_encode($standard),
            'X-Botix-Signature' => 'sha256=' . hash_hmac('sha256', "{$timestamp}." . $payload, $secret),
            'X-Botix-Timestamp' => (string) $timestamp,
        ];
    }

    /** @return array<string, string> */
    private static function lowerHeaders(iterable $headers): array
    {
        $out = [];
        foreach ($headers as $name => $value) {
            // A list of [name, value] pairs (as the API returns request_headers).
            if (is_int($name) && is_array($value) && count($value) === 2 && array_is_list($value)) {
                [$name, $value] = $value;
            }
            $value = trim(is_array($value) ? implode(', ', array_map('strval', $value)) : (string) $value);
            if ($value !== '') {
                $out[strtolower((string) $name)] = $value;
            }
        }
        return $out;
    }

    private static function allPresent(array $h, array $names): bool
    {
        return count(array_filter($names, fn ($n) => isset($h[$n]))) === count($names);
    }

    private static function anyPresent(array $h, array $names): bool
    {
        return count(array_filter($names, fn ($n) => isset($h[$n]))) > 0;
    }

    private static function header(array $h, string $name): string
    {
        if (strlen($h[$name]) > self::MAX_HEADER_LENGTH) {
            throw new WebhookVerificationError("header {$name} is too long");
        }
        return $h[$name];
    }

    private static function checkTimestamp(string $stamp, int $now, int $tolerance): void
    {
        if (!preg_match('/^\d{1,12}$/', $stamp)) {
            throw new InvalidTimestampError('timestamp `' . substr($stamp, 0, 20) . '` is not Unix seconds');
        }
        $age = $now - (int) $stamp;
        if ($age > $tolerance) {
            throw new InvalidTimestampError("timestamp is {$age} s old, more than the tolerance of {$tolerance} s");
        }
        if (-$age > $tolerance) {
            $ahead = -$age;
            throw new InvalidTimestampError("timestamp is {$ahead} s in the future, more than the tolerance of {$tolerance} s");
        }
    }

    private static function standardKey(string $secret): string
    {
        $raw = str_starts_with($secret, 'whsec_') ? substr($secret, strlen('whsec_')) : $secret;
        $key = base64_decode($raw, true);
        if ($raw === '' || $key === false) {
            throw new \InvalidArgumentException('the secret is not a whsec_ secret (base64 after the prefix)');
        }
        return $key;
    }

    /** `v1,<base64>` entries separated by spaces; other versions are skipped. */
    private static function standardSignatures(string $header): array
    {
        $out = [];
        foreach (array_slice(preg_split('/\s+/', $header), 0, self::MAX_SIGNATURES) as $entry) {
            [$version, $sig] = array_pad(explode(',', $entry, 2), 2, '');
            $bytes = $version === 'v1' ? base64_decode($sig, true) : false;
            if ($bytes !== false && $bytes !== '') {
                $out[] = $bytes;
            }
        }
        return $out;
    }

    /** `sha256=<hex>` entries separated by commas (two while a rotated secret is valid). */
    private static function botixSignatures(string $header): array
    {
        $out = [];
        foreach (array_slice(explode(',', $header), 0, self::MAX_SIGNATURES) as $entry) {
            [$scheme, $sig] = array_pad(explode('=', trim($entry), 2), 2, '');
            if ($scheme === 'sha256' && $sig !== '' && strlen($sig) % 2 === 0 && ctype_xdigit($sig)) {
                $out[] = hex2bin($sig);
            }
        }
        return $out;
    }
}
