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
    /**
     * @var list<FilteredOut> the endpoints subscribed to its type whose filters it did not
     *      pass, and why: they had no attempt (`deliveries` counts only the others); [] when none
     */
    public array $filtered_out = [];

    public static function fromArray(array $data): static
    {
        $event = parent::fromArray($data);
        $event->filtered_out = array_map(static fn (array $f) => FilteredOut::fromArray($f), $data['filtered_out'] ?? []);
        return $event;
    }
}
