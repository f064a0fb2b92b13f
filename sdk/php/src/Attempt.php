<?php

declare(strict_types=1);

namespace Posthorn;

/** What the onResponse hook receives after every HTTP attempt. */
final class Attempt
{
    /** @param array<string, string> $headers */
    public function __construct(
        public readonly string $method,
        public readonly string $path,
        /** 0 for the first try of a call, then 1, 2, … */
        public readonly int $retry,
        /** Unix seconds (microtime) just before the request was sent. */
        public readonly float $sentAt,
        /** Unix seconds when the answer (or the error) came. */
        public readonly float $receivedAt,
        /** The HTTP status, or null when no answer came (connection error, timeout). */
        public readonly ?int $status,
        public readonly array $headers,
    ) {
    }
}
