<?php

declare(strict_types=1);

namespace Posthorn\Model;

class Event extends Model
{
    public string $id;
    public string $event;
    public mixed $data;
    public int $deliveries;
    public ?string $ordering_key;
    public \DateTimeImmutable $created_at;
}
