<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** One of the operator's customers. */
class Project extends Model
{
    public int $id;
    /** the operator's own id for this customer */
    public ?string $uid = null;
    public string $name;
    /** trial or business */
    public string $plan;
    public EffectiveLimits $limits;
    /** @var list<string> origins that may frame this project's portal pages */
    public array $frame_ancestors;
    public Brand $brand;
    /** attempts carry W3C trace context (traceparent) to the project's receivers */
    public bool $trace_propagation;
    public \DateTimeImmutable $created_at;
}
