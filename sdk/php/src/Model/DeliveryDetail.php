<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** An attempt with the exact body sent and the headers both ways. */
class DeliveryDetail extends Delivery
{
    public string $payload;
    /** @var list<array{string, string}>|null */
    public ?array $request_headers;
    /** @var list<array{string, string}>|null */
    public ?array $response_headers;
    public ?string $response_body;
}
