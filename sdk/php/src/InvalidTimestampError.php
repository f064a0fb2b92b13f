<?php

declare(strict_types=1);

namespace Posthorn;

/** The timestamp is not a number, or further than the tolerance from now. */
class InvalidTimestampError extends WebhookVerificationError
{
}
