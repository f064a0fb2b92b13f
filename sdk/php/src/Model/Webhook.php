<?php

declare(strict_types=1);

namespace Posthorn\Model;

/**
 * An endpoint. `secret` is only set in the answers to create and rotateSecret of an HMAC
 * endpoint, and to an update that switches to `hmac-sha256`.
 */
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
    /** `hmac-sha256` (signed with the secret) or `ed25519` (v1a, checked with `public_key`) */
    public string $signature_scheme = 'hmac-sha256';
    /** `whpk_…`, once the endpoint has an ed25519 key; null: none */
    public ?string $public_key = null;
    /** the CEL filter events must match to be sent here; null: every event of `events` */
    public ?string $filter = null;
    public ?string $secret = null;
    /** only for an endpoint that is no plain URL (a `posthorn listen` session's) */
    public ?Destination $destination = null;
}
