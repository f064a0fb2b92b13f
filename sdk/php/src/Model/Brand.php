<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** What the portal shows instead of Posthorn's look; null: not set. */
class Brand extends Model
{
    /** the name the portal shows instead of the project's */
    public ?string $name = null;
    /** the accent colour, #rrggbb */
    public ?string $accent = null;
    /** an https image the portal shows in its header */
    public ?string $logo_url = null;
}
