<?php

declare(strict_types=1);

namespace Posthorn;

/** Neither scheme's headers are all present. */
class MissingHeadersError extends WebhookVerificationError
{
}
