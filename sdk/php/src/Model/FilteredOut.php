<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** An endpoint subscribed to an event's type that its filter kept the event from. */
class FilteredOut extends Model
{
    public int $endpoint_id;
    /** e.g. `the filter was false`, or why the filter failed on this event */
    public string $reason;
}
