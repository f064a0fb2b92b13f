<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** Where an endpoint that is no plain URL sends: `listen`, a `posthorn listen` session's. */
class Destination extends Model
{
    public string $type;
    /** the session's `--name`; null: it ends when its CLI exits */
    public ?string $name;
    /** its CLI is connected now */
    public bool $connected;
}
