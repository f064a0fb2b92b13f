<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** An erasure (by subject, or of one event) and what it has erased so far. */
class Erasure extends Model
{
    public int $id;
    /** running, then done once no attempt of its events is in flight */
    public string $status;
    /** the subject; null for the erasure of one event */
    public ?string $subject;
    /** the event; null for an erasure by subject */
    public ?string $event_id;
    public \DateTimeImmutable $created_at;
    public ?\DateTimeImmutable $finished_at;
    /** events whose data, subjects and attempts' responses were erased */
    public int $events;
    /** attempts of those events */
    public int $attempts;
    /** waiting attempts ended as dead letters (error_kind "erased") */
    public int $dead_lettered;
    /** Redirect copies in inspector bins whose bodies were erased */
    public int $inspector_copies;
}
