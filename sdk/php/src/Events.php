<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Event;
use Posthorn\Model\EventAccepted;
use Posthorn\Model\Page;

/** `/events`: send events; read them back by id or by cursor. */
final class Events
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Stores the event and fans it out to every subscribed endpoint. An idempotency key is
     * made up when none is given, so a retry after a lost answer never sends it twice.
     * Events with the same $orderingKey reach each endpoint one at a time, in the order
     * they were accepted.
     */
    public function send(string $event, mixed $data, ?string $idempotencyKey = null, ?string $orderingKey = null): EventAccepted
    {
        $key = $idempotencyKey ?: 'phk-' . bin2hex(random_bytes(16));
        $out = ['event' => $event, 'data' => $data];
        if ($orderingKey !== null) {
            $out['ordering_key'] = $orderingKey;
        }
        $body = $this->t->request('POST', '/events', body: $out, headers: ['Idempotency-Key' => $key]);
        return EventAccepted::fromArray($body);
    }

    public function get(string $id): Event
    {
        return Event::fromArray($this->t->request('GET', Client::path('events', $id)));
    }

    /** One page, oldest first. */
    public function list(?string $cursor = null, ?int $limit = null, string|\DateTimeInterface|null $since = null, ?string $type = null): Page
    {
        $query = ['cursor' => $cursor, 'limit' => $limit, 'since' => Client::since($since), 'type' => $type];
        return Client::page($this->t, '/events', $query, Event::class);
    }

    /**
     * Every event from `$cursor` (or the beginning) on, each exactly once.
     *
     * @return CursorIterator<Event>
     */
    public function iter(?string $cursor = null, string|\DateTimeInterface|null $since = null, ?string $type = null, int $pageSize = 100): CursorIterator
    {
        return new CursorIterator(fn (?string $c) => $this->list($c, $pageSize, $since, $type), $cursor);
    }
}
