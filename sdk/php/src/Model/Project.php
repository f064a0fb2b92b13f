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
    public \DateTimeImmutable $created_at;
}
