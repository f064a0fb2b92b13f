<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\PortalLink;

/** `/projects/{id}/portal-links`: single-use sign-in links into a project's portal. */
final class PortalLinks
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * A link that signs one of the operator's users (`$userId`, with their `$email` and
     * `$name` if given) into the project's portal. Not retried on 5xx.
     *
     * @param string $role owner or member (manage endpoints and deliveries), or viewer (reads only)
     * @param int|null $expiresIn seconds until the link expires: 1 to 3600, default 300
     */
    public function create(int $projectId, string $userId, string $role, ?string $email = null, ?string $name = null, ?int $expiresIn = null): PortalLink
    {
        $user = array_filter(['id' => $userId, 'email' => $email, 'name' => $name], static fn ($v) => $v !== null);
        $body = array_filter(['user' => $user, 'role' => $role, 'expires_in' => $expiresIn], static fn ($v) => $v !== null);
        return PortalLink::fromArray($this->t->request('POST', Client::path('projects', $projectId, 'portal-links'), body: $body, retrySafe: false));
    }
}
