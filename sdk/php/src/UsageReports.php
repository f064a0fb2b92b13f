<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Usage;

/** `/projects/{id}/usage`: what a project used per UTC day, for billing. */
final class UsageReports
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Usage from `$since` to `$until`, both UTC days included (`YYYY-MM-DD` strings or
     * dates). Defaults: `$until` today, `$since` 29 days before it; at most 400 days are counted.
     */
    public function get(int $projectId, string|\DateTimeInterface|null $since = null, string|\DateTimeInterface|null $until = null): Usage
    {
        $query = ['since' => Operator::day($since), 'until' => Operator::day($until)];
        return Usage::fromArray($this->t->request('GET', Client::path('projects', $projectId, 'usage'), $query));
    }
}
