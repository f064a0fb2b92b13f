<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** Every limit's value for a project: the default, the plan's or the operator's override. */
class EffectiveLimits extends Model
{
    public int $endpoints;
    public int $api_keys;
    public int $members;
    public int $event_types_per_endpoint;
    public int $concurrent_replays;
    public int $data_depth;
    public int $concurrent_erasures;
    public int $api_requests_per_minute;
    public int $retention_days;
}
