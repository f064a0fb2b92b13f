<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Page;
use Posthorn\Model\Project;

/** `/projects`: the operator's customers, one project each. */
final class Projects
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Creates a project. Not retried on 5xx: a repeat could create two.
     *
     * @param string|null $uid the operator's own id for the customer, unique among live projects (else 409)
     * @param string|null $plan trial (the default) or business
     * @param array<string, int>|null $limits overrides by name (endpoints, api_keys, members,
     *        event_types_per_endpoint, concurrent_replays, data_depth, concurrent_erasures,
     *        api_requests_per_minute, retention_days)
     * @param list<string>|null $frameAncestors origins that may frame the portal: https://host[:port]
     * @param array{name?: string, accent?: string, logo_url?: string}|null $brand
     * @param bool|null $tracePropagation pass W3C trace context on to its receivers (default true)
     */
    public function create(string $name, ?string $uid = null, ?string $plan = null, ?array $limits = null, ?array $frameAncestors = null, ?array $brand = null, ?bool $tracePropagation = null): Project
    {
        $body = self::body(['name' => $name, 'uid' => $uid, 'plan' => $plan, 'limits' => $limits, 'frame_ancestors' => $frameAncestors, 'brand' => $brand, 'trace_propagation' => $tracePropagation]);
        return Project::fromArray($this->t->request('POST', '/projects', body: $body, retrySafe: false));
    }

    /** One page of live projects, oldest first ($limit 1 to 200, default 50). */
    public function list(?string $cursor = null, ?int $limit = null, ?string $uid = null): Page
    {
        $body = $this->t->request('GET', '/projects', ['cursor' => $cursor, 'limit' => $limit, 'uid' => $uid]);
        return new Page(
            array_map(static fn (array $p) => Project::fromArray($p), $body['data']),
            (bool) $body['has_more'],
            (string) $body['next_cursor'],
        );
    }

    /**
     * Every live project from `$cursor` (or the beginning) on, each exactly once.
     *
     * @return CursorIterator<Project>
     */
    public function iter(?string $cursor = null, ?string $uid = null, int $pageSize = 100): CursorIterator
    {
        return new CursorIterator(fn (?string $c) => $this->list($c, $pageSize, $uid), $cursor);
    }

    /** The live project that carries the operator's id `$uid`, or null. */
    public function find(string $uid): ?Project
    {
        return $this->list(limit: 1, uid: $uid)->data[0] ?? null;
    }

    public function get(int $id): Project
    {
        return Project::fromArray($this->t->request('GET', Client::path('projects', $id)));
    }

    /**
     * Changes the given fields only (`name`, `uid`, `plan`, `limits`, `frame_ancestors`,
     * `brand`, `trace_propagation`); `limits`, `frame_ancestors` and `brand` each replace the old value whole.
     * Retried like a GET: it sets values, so a repeat leaves the same project.
     *
     * @param array{name?: string, uid?: string, plan?: string, limits?: array<string, int>,
     *              frame_ancestors?: list<string>, brand?: array{name?: string, accent?: string, logo_url?: string},
     *              trace_propagation?: bool} $changes
     */
    public function update(int $id, array $changes): Project
    {
        return Project::fromArray($this->t->request('PATCH', Client::path('projects', $id), body: self::body($changes)));
    }

    /**
     * The project is gone at once: its id answers 404, its keys and portal sessions stop
     * working, nothing more is sent for it; its data is purged in the background.
     */
    public function delete(int $id): void
    {
        $this->t->request('DELETE', Client::path('projects', $id));
    }

    /** The fields given; `limits` and `brand` are JSON objects even when empty. */
    private static function body(array $fields): object
    {
        $fields = array_filter($fields, static fn ($v) => $v !== null);
        foreach (['limits', 'brand'] as $name) {
            if (isset($fields[$name])) {
                $fields[$name] = (object) $fields[$name];
            }
        }
        if (isset($fields['frame_ancestors'])) {
            $fields['frame_ancestors'] = array_values($fields['frame_ancestors']);
        }
        return (object) $fields;
    }
}
