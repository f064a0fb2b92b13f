<?php

declare(strict_types=1);

namespace Posthorn;

/** The API answered with an error: `{"error": {"code", "message"}}` and its status. */
class ApiError extends PosthornError
{
    /** @param array<string, string> $headers */
    public function __construct(
        public readonly int $status,
        public readonly string $errorCode,
        public readonly string $apiMessage,
        public readonly array $headers = [],
    ) {
        parent::__construct("{$status} {$errorCode}: {$apiMessage}", $status);
    }
}
