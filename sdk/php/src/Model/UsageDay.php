<?php

declare(strict_types=1);

namespace Posthorn\Model;

class UsageDay extends Model
{
    /** a UTC day, YYYY-MM-DD */
    public string $day;
    public int $events;
    public AttemptCounts $attempts;
}
