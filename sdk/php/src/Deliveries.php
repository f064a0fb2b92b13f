<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Delivery;
use Posthorn\Model\DeliveryDetail;
use Posthorn\Model\Page;

/** `/deliveries`: every attempt; manual retry. */
final class Deliveries
{
    public function __construct(private readonly Transport $t)
    {
    }

    /** @param string|null $status pending, in_flight, succeeded, failed or dead_letter */
    public function list(?string $cursor = null, ?int $limit = null, string|\DateTimeInterface|null $since = null, ?string $status = null, ?string $eventId = null, ?string $orderingKey = null): Page
    {
        $query = ['cursor' => $cursor, 'limit' => $limit, 'since' => Client::since($since), 'status' => $status, 'event_id' => $eventId, 'ordering_key' => $orderingKey];
        return Client::page($this->t, '/deliveries', $query, Delivery::class);
    }

    /** @return CursorIterator<Delivery> */
    public function iter(?string $cursor = null, string|\DateTimeInterface|null $since = null, ?string $status = null, ?string $eventId = null, int $pageSize = 100): CursorIterator
    {
        return new CursorIterator(fn (?string $c) => $this->list($c, $pageSize, $since, $status, $eventId), $cursor);
    }

    public function get(int $id): DeliveryDetail
    {
        return DeliveryDetail::fromArray($this->t->request('GET', Client::path('deliveries', $id)));
    }

    /** Sends the event again as a new attempt. Not retried on 5xx: a repeat would queue a second one. */
    public function retry(int $id): Delivery
    {
        return Delivery::fromArray($this->t->request('POST', Client::path('deliveries', $id, 'retry'), retrySafe: false));
    }
}
