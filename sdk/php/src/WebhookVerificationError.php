<?php

declare(strict_types=1);

namespace Posthorn;

/** The delivery cannot be trusted; `reason` says why. */
class WebhookVerificationError extends \RuntimeException
{
    public readonly string $reason;

    public function __construct(string $reason)
    {
        parent::__construct($reason);
        $this->reason = $reason;
    }
}
