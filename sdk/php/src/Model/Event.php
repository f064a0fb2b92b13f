<?php

declare(strict_types=1);

namespace Posthorn\Model;

class Event extends Model
{
    public string $id;
    public string $event;
    /** the data it was sent with, decoded as arrays; null once erased */
    public ?array $data = null;
    public int $deliveries;
    public ?string $ordering_key;
    public \DateTimeImmutable $created_at;
    /** @var list<string> the data subjects it was sent with ([] when none, or once erased) */
    public array $subjects = [];
    /** when its data was erased, and by which erasure; null while it is kept */
    public ?\DateTimeImmutable $erased_at = null;
    public ?int $erasure_id = null;
}
