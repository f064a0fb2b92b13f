<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Erasure;
use Posthorn\Model\Event;
use Posthorn\Model\EventAccepted;
use Posthorn\Model\Page;

/** `/events`: send events; read them back by id or by cursor; erase one's data. */
final class Events
{
    // eraseData may wait 40 s on the server for attempts in flight before answering.
    private const ERASE_TIMEOUT = 60.0;

    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Stores the event and fans it out to every subscribed endpoint. An idempotency key is
     * made up when none is given, so a retry after a lost answer never sends it twice.
     * Events with the same $orderingKey reach each endpoint one at a time, in the order
     * they were accepted. $subjects name the data subjects the event is about (`user:42`,
     * at most 10), so that `erasures->create($subject)` finds it.
     *
     * @param list<string>|null $subjects
     */
    public function send(string $event, mixed $data, ?string $idempotencyKey = null, ?string $orderingKey = null, ?array $subjects = null): EventAccepted
    {
        $key = $idempotencyKey ?: 'phk-' . bin2hex(random_bytes(16));
        $out = ['event' => $event, 'data' => $data];
        if ($orderingKey !== null) {
            $out['ordering_key'] = $orderingKey;
        }
        if ($subjects !== null) {
            $out['subjects'] = array_values($subjects);
        }
        $body = $this->t->request('POST', '/events', body: $out, headers: ['Idempotency-Key' => $key]);
        return EventAccepted::fromArray($body);
    }

    /**
     * Stores up to 100 events in one request, all or none, fanned out in order; the answers
     * are in the same order. Each costs one unit of the rate limit. Every item without an
     * `id` gets a made-up idempotency key, so a retry after a lost answer never sends one twice.
     *
     * @param list<array{event: string, data: array, id?: string, ordering_key?: string, subjects?: list<string>}> $events
     * @return list<EventAccepted>
     */
    public function sendBatch(array $events): array
    {
        $items = array_map(static function (array $e): array {
            $e['id'] = ($e['id'] ?? '') ?: 'phk-' . bin2hex(random_bytes(16));
            if (isset($e['subjects'])) {
                $e['subjects'] = array_values($e['subjects']);
            }
            return $e;
        }, array_values($events));
        $body = $this->t->request('POST', '/events/batch', body: ['events' => $items]);
        return array_map(static fn (array $a) => EventAccepted::fromArray($a), $body['data']);
    }

    public function get(string $id): Event
    {
        return Event::fromArray($this->t->request('GET', Client::path('events', $id)));
    }

    /**
     * Erases the event's data and subjects and its attempts' response bodies and headers;
     * its waiting attempts become dead letters (`error_kind` `erased`). Answers null once
     * done (also for an event erased before), or the Erasure still running if an attempt
     * was in flight after the server's 40 s wait: it finishes when that attempt comes back
     * (`erasures->get`). Retried like a GET: a repeat erases nothing more.
     */
    public function eraseData(string $id): ?Erasure
    {
        $body = $this->t->request('DELETE', Client::path('events', $id, 'data'), timeout: max($this->t->timeout, self::ERASE_TIMEOUT));
        return $body === null ? null : Erasure::fromArray($body);
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
