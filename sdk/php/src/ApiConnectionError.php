<?php

declare(strict_types=1);

namespace Posthorn;

/** No answer: connection refused or reset, DNS failure, or timeout. */
class ApiConnectionError extends PosthornError
{
}
