<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** A replay (as `webhooks->recover` starts it) and how far it has come. */
class Replay extends Model
{
    public int $id;
    /** running, done or cancelled */
    public string $status;
    /** the (event, endpoint) pairs it sends, one new attempt each */
    public int $total;
    /** attempts queued so far */
    public int $queued;
    /** of those, attempts with an outcome */
    public int $finished;
    /** attempts queued per second, per endpoint */
    public int $per_second;
}
