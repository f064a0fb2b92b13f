<?php

declare(strict_types=1);

namespace Posthorn\Model;

/**
 * One page of a list: resume from `next_cursor`; fetch again now only if `has_more`.
 *
 * @template T
 */
class Page
{
    /** @param list<T> $data */
    public function __construct(
        public array $data,
        public bool $has_more,
        public string $next_cursor,
    ) {
    }
}
