<?php

declare(strict_types=1);

namespace Posthorn\Model;

/**
 * An event type's JSON Schema (draft 2020-12) as set: while it is set, `events->send` and
 * `events->sendBatch` refuse events of the type whose `data` fails it.
 */
class EventTypeSchema extends Model
{
    /** the event type, e.g. `order.paid` */
    public string $event;
    /** 1 when first set, one more at every change */
    public int $version;
    public \DateTimeImmutable $updated_at;
    /** the schema as sent, decoded as arrays (an empty JSON object reads as []) */
    public array $schema;
}
