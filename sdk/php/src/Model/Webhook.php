<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** An endpoint. `secret` is only set in the answers to create and rotateSecret. */
class Webhook extends Model
{
    public int $id;
    public string $url;
    /** @var list<string> */
    public array $events;
    public string $description;
    public bool $enabled;
    public \DateTimeImmutable $created_at;
    /** @var list<string> names of the custom headers */
    public array $headers;
    /** attempts per second at most; null: unlimited */
    public ?int $rate_limit = null;
    /** presented to the receiver when it asks for one (mutual TLS); null: none */
    public ?ClientCertificate $client_certificate = null;
    public ?string $secret = null;
}
