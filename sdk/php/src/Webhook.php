<?php

declare(strict_types=1);

namespace Posthorn;

/**
 * Verifying a delivery: one call, both signature schemes, constant-time comparison.
 *
 * Posthorn signs every attempt twice: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64>`) and its own `X-Botix-Signature: sha256=<hex>` with
 * `X-Botix-Timestamp`. Either is enough; the Standard Webhooks one is checked when present.
 * An endpoint with the ed25519 scheme signs `v1a,<base64>` (Standard Webhooks only), checked
 * with its `whpk_` public key through ext-sodium.
 */
final class Webhook
{
    public const DEFAULT_TOLERANCE = 300;
    // Bounds on what a sender controls: a rotation sends two signatures; more is abuse.
    private const MAX_SIGNATURES = 16;
    private const MAX_HEADER_LENGTH = 4096;
    private const STANDARD = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
    private const BOTIX = ['x-botix-signature', 'x-botix-timestamp'];
    private const PUBLIC_KEY_PREFIX = 'whpk_';
    private const ED25519_KEY_LENGTH = 32;
    private const ED25519_SIGNATURE_LENGTH = 64;

    /**
     * Checks a delivery and returns its parsed JSON body (as arrays).
     *
     * @param string $payload the raw request body, e.g. file_get_contents('php://input')
     * @param iterable<string|int, mixed> $headers e.g. getallheaders(), a PSR-7 getHeaders(),
     *        or a list of [name, value] pairs; names are matched case-insensitively
     * @param string $secret the endpoint's `whsec_…` secret, or the `whpk_…` public key of an
     *        endpoint with the ed25519 scheme (then only `v1a` signatures count; needs ext-sodium)
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
        // A bad public key is a setup mistake: thrown whatever the headers are.
        $publicKey = str_starts_with($secret, self::PUBLIC_KEY_PREFIX) ? self::ed25519Key($secret) : null;
        $h = self::lowerHeaders($headers);
        $now ??= time();
        // X-Botix signatures are HMACs only: a public key cannot check them.
        $schemes = $publicKey !== null ? [self::STANDARD] : [self::STANDARD, self::BOTIX];
        if (self::allPresent($h, self::STANDARD)) {
            [$id, $stamp, $header] = array_map(fn ($n) => self::header($h, $n), self::STANDARD);
            self::checkTimestamp($stamp, $now, $tolerance);
            $content = "{$id}.{$stamp}." . $payload;
            if ($publicKey !== null) {
                $matched = false;
                // Nothing secret is involved, so stopping at the first match leaks nothing.
                foreach (self::standardSignatures($header, 'v1a', self::ED25519_SIGNATURE_LENGTH) as $sig) {
                    if (sodium_crypto_sign_verify_detached($sig, $content, $publicKey)) {
                        $matched = true;
                        break;
                    }
                }
            } else {
                $expected = hash_hmac('sha256', $content, self::standardKey($secret), true);
                $matched = self::anyEqual(self::standardSignatures($header), $expected);
            }
        } elseif ($publicKey === null && self::allPresent($h, self::BOTIX)) {
            [$header, $stamp] = array_map(fn ($n) => self::header($h, $n), self::BOTIX);
            self::checkTimestamp($stamp, $now, $tolerance);
            $expected = hash_hmac('sha256', "{$stamp}." . $payload, $secret, true);
            $matched = self::anyEqual(self::botixSignatures($header), $expected);
        } else {
            // Name what is missing from the scheme the sender started on, else from both.
            $started = array_filter($schemes, fn ($s) => self::anyPresent($h, $s));
            $names = array_merge(...($started ?: $schemes));
            $missing = array_values(array_filter($names, fn ($n) => !isset($h[$n])));
            throw new MissingHeadersError('missing header ' . implode(', ', $missing));
        }
        if (!$matched) {
            $kind = $publicKey !== null ? 'public key' : 'secret';
            throw new InvalidSignatureError("no signature matches the body and the {$kind}");
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

    /** The raw 32 bytes of a `whpk_` key. */
    private static function ed25519Key(string $key): string
    {
        $raw = base64_decode(substr($key, strlen(self::PUBLIC_KEY_PREFIX)), true);
        if ($raw === false || strlen($raw) !== self::ED25519_KEY_LENGTH) {
            throw new \InvalidArgumentException('the key is not a whpk_ public key (base64 of 32 bytes after the prefix)');
        }
        if (!function_exists('sodium_crypto_sign_verify_detached')) {
            throw new \RuntimeException('verifying v1a (ed25519) signatures with a whpk_ key needs the sodium extension (ext-sodium)');
        }
        return $raw;
    }

    private static function anyEqual(array $candidates, string $expected): bool
    {
        // Every candidate is compared, so the time taken does not tell which one was close.
        $matched = false;
        foreach ($candidates as $candidate) {
            $matched = hash_equals($expected, $candidate) || $matched;
        }
        return $matched;
    }

    /**
     * `<version>,<base64>` entries separated by spaces; other versions, and signatures of
     * another `$length` when one is given, are skipped.
     */
    private static function standardSignatures(string $header, string $version = 'v1', ?int $length = null): array
    {
        $out = [];
        foreach (array_slice(preg_split('/\s+/', $header), 0, self::MAX_SIGNATURES) as $entry) {
            [$found, $sig] = array_pad(explode(',', $entry, 2), 2, '');
            $bytes = $found === $version ? base64_decode($sig, true) : false;
            if ($bytes !== false && $bytes !== '' && ($length === null || strlen($bytes) === $length)) {
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
