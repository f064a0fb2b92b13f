<?php

declare(strict_types=1);

namespace Posthorn;

/** No signature in the headers matches the body and the secret. */
class InvalidSignatureError extends WebhookVerificationError
{
}
