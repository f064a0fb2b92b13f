<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** What a project used from `since` to `until` (UTC days, YYYY-MM-DD, both included). */
class Usage extends Model
{
    public int $project_id;
    public string $since;
    public string $until;
    /** events accepted in the window */
    public int $events;
    /** attempts finished in the window, by how they ended */
    public AttemptCounts $attempts;
    /** @var list<UsageDay> the days that saw any use, oldest first */
    public array $days;

    public static function fromArray(array $data): static
    {
        $usage = parent::fromArray($data);
        $usage->days = array_map(static fn (array $d) => UsageDay::fromArray($d), $data['days'] ?? []);
        return $usage;
    }
}
