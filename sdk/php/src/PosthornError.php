<?php

declare(strict_types=1);

namespace Posthorn;

/** Base of every error the API client throws. Verification errors are WebhookVerificationError. */
class PosthornError extends \RuntimeException
{
}
