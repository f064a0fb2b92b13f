<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Erasure;

/** `/erasures`: erase every event that names a data subject; follow an erasure. */
final class Erasures
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Erases, in the background, every event of the project accepted until now whose
     * `subjects` name $subject, as `events->eraseData` does one; answers the erasure at
     * once (`running`), which `get` follows until it is `done`. Counts against the
     * project's `concurrent_erasures` (ApiError 422 `limit_reached`). Not retried on 5xx:
     * a repeat would start a second erasure.
     */
    public function create(string $subject): Erasure
    {
        return Erasure::fromArray($this->t->request('POST', '/erasures', body: ['subject' => $subject], retrySafe: false));
    }

    public function get(int $id): Erasure
    {
        return Erasure::fromArray($this->t->request('GET', Client::path('erasures', $id)));
    }
}
