<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Page;

/**
 * Items of every page in turn (`foreach`). `cursor` is where the pages read so far end:
 * store it and pass it as `cursor` to iter() later to go on from there.
 *
 * @template T
 * @implements \IteratorAggregate<int, T>
 */
final class CursorIterator implements \IteratorAggregate
{
    /** @param \Closure(?string): Page $fetch */
    public function __construct(private readonly \Closure $fetch, public ?string $cursor = null)
    {
    }

    public function getIterator(): \Generator
    {
        do {
            $page = ($this->fetch)($this->cursor);
            $this->cursor = $page->next_cursor;
            foreach ($page->data as $item) {
                yield $item;
            }
        } while ($page->has_more);
    }
}
