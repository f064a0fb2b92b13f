<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Replay;

/** `/replays`: follow or cancel a replay started by `webhooks->recover`. */
final class Replays
{
    public function __construct(private readonly Transport $t)
    {
    }

    public function get(int $id): Replay
    {
        return Replay::fromArray($this->t->request('GET', Client::path('replays', $id)));
    }

    /**
     * Stops the replay (what it queued already stays queued) and answers it: `cancelled`,
     * or unchanged if it had finished. Retried like a GET: a repeat leaves the same replay.
     */
    public function cancel(int $id): Replay
    {
        return Replay::fromArray($this->t->request('POST', Client::path('replays', $id, 'cancel'), retrySafe: true));
    }
}
