<?php

declare(strict_types=1);

namespace Posthorn\Model;

/**
 * Where an endpoint that is no plain URL sends: `listen`, a `posthorn listen` session's, or
 * a broker it publishes to (`redis`, `nats`, `mqtt`, `rabbitmq`) with its settings; credentials are never returned.
 */
class Destination extends Model
{
    public string $type;
    /** a listen session's `--name`; null: it ends when its CLI exits (null for a broker) */
    public ?string $name;
    /** a listen session's CLI is connected now */
    public bool $connected;
    /** a broker's URL, without credentials */
    public ?string $url = null;
    /** redis: the stream appended to */
    public ?string $stream = null;
    /** redis: the stream's approximate length bound */
    public ?int $maxlen = null;
    /** nats: the JetStream subject published to */
    public ?string $subject = null;
    /** rabbitmq: the exchange ("": the default exchange) */
    public ?string $exchange = null;
    /** rabbitmq: the routing key */
    public ?string $routing_key = null;
    /** mqtt: the topic published to */
    public ?string $topic = null;
    /** mqtt: 0 or 1 */
    public ?int $qos = null;
    /** a broker has credentials (sealed, never shown) */
    public bool $credentials_set;
}
