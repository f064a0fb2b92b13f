<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\CreatedKey;

/** `/projects/{id}/api-keys`: the projects' public API keys. */
final class ApiKeys
{
    public function __construct(private readonly Transport $t)
    {
    }

    /** Mints a public API key (`phk_…`); `key` is shown this once. Not retried on 5xx: a repeat would mint two. */
    public function create(int $projectId, string $name): CreatedKey
    {
        return CreatedKey::fromArray($this->t->request('POST', Client::path('projects', $projectId, 'api-keys'), body: ['name' => $name], retrySafe: false));
    }

    /** The key stops working at once (the public API answers it 401). */
    public function revoke(int $projectId, int $keyId): void
    {
        $this->t->request('DELETE', Client::path('projects', $projectId, 'api-keys', $keyId));
    }
}
