<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\EventTypeSchema;

/** `/event-types/{type}/schema`: a JSON Schema per event type, which the `data` of its events must pass. */
final class EventTypes
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Sets (or replaces) the JSON Schema (draft 2020-12) that the `data` of every event of
     * $type sent from now on must pass: `events->send` and `events->sendBatch` throw an
     * ApiError 422 `invalid` for one that fails it, its `apiMessage` naming the path and the
     * rule (`data.amount: 0 is less than the minimum of 1 (rule …)`; in a batch prefixed
     * `events[1].`). Answers it with its `version` (1, then one more at every change).
     * `$ref` resolves only within the schema (`#…`; a remote one is refused), `format` is
     * asserted. Refused: ApiError 422 `invalid` for a schema the server does not accept (its
     * message says where), 413 `too_large` over 64 KiB, 422 `limit_reached` past 200
     * schemas per project. Retried like a GET: a repeat leaves the same schema (its version
     * one more).
     *
     * @param array<string, mixed>|\stdClass|string $schema a PHP array, objects (as
     *        `json_decode($json)` gives them) or the JSON text. An empty PHP array is sent
     *        as `[]`: where the schema has `{}` (`"properties": {}`, `"items": {}`), pass
     *        objects or the JSON text.
     */
    public function setSchema(string $type, array|\stdClass|string $schema): EventTypeSchema
    {
        if (is_string($schema)) {
            // Decoded to objects, so that `{}` is sent as `{}`.
            $schema = json_decode($schema, false, 512, JSON_THROW_ON_ERROR);
            if (!$schema instanceof \stdClass) {
                throw new \InvalidArgumentException('a schema is a JSON object');
            }
        }
        return EventTypeSchema::fromArray($this->t->request('PUT', Client::path('event-types', $type, 'schema'), body: $schema));
    }

    /**
     * The schema as set; an ApiError 404 `not_found` when the type has none. Decoded as
     * arrays, or with $associative false as objects (`\stdClass`), which keep `{}` apart
     * from `[]` and can be passed back to setSchema as they are.
     *
     * @return array<string, mixed>|\stdClass
     */
    public function getSchema(string $type, bool $associative = true): array|\stdClass
    {
        return $this->t->request('GET', Client::path('event-types', $type, 'schema'), associative: $associative);
    }

    /** Removes the type's schema: its events are no longer checked. An ApiError 404 `not_found` when it has none. */
    public function deleteSchema(string $type): void
    {
        $this->t->request('DELETE', Client::path('event-types', $type, 'schema'));
    }
}
