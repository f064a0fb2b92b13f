<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** One delivery attempt. */
class Delivery extends Model
{
    public int $id;
    public string $request_id;
    public string $event_id;
    public string $event_type;
    public int $endpoint_id;
    public string $target_url;
    public int $attempt;
    /** auto, manual_retry, redirect, test or notice */
    public string $trigger;
    public ?string $triggered_by;
    /** pending, in_flight, succeeded, failed or dead_letter */
    public string $status;
    public \DateTimeImmutable $scheduled_at;
    public ?\DateTimeImmutable $started_at;
    public \DateTimeImmutable $created_at;
    public ?\DateTimeImmutable $finished_at;
    public ?int $duration_ms;
    public ?int $response_status;
    public ?string $error_kind;
    public ?string $error;
    public ?string $ordering_key;
    /** While the attempt waits behind an earlier event with the same key: that event's id. */
    public ?string $waits_for;
}
