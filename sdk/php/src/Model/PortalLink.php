<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** Single-use: opening `url` signs the browser into the project's portal. */
class PortalLink extends Model
{
    public string $url;
    public \DateTimeImmutable $expires_at;
}
