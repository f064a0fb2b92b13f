<?php

declare(strict_types=1);

namespace Posthorn;

/** A 429 the client gave up on (retries spent, or a wait longer than maxWait). */
class RateLimitError extends ApiError
{
    /** @param array<string, string> $headers */
    public function __construct(int $status, string $errorCode, string $apiMessage, array $headers, public readonly ?float $retryAfter)
    {
        parent::__construct($status, $errorCode, $apiMessage, $headers);
    }
}
