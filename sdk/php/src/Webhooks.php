<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Replay;
use Posthorn\Model\Webhook as WebhookModel;

/** `/webhooks`: the project's endpoints. */
final class Webhooks
{
    public function __construct(private readonly Transport $t)
    {
    }

    /**
     * Creates an endpoint; the answer carries its `secret`. Not retried on 5xx (a repeat
     * could create a second one).
     *
     * @param list<string> $events event types (`order.paid`) or `*`
     * @param array<string, string>|null $headers custom headers sent with every attempt
     * @param array{cert: string, key: string}|null $clientCertificate PEM, presented to the
     *        receiver when it asks for one (mutual TLS): the certificate first, then up to 4
     *        of its chain, and its key. Write-only; one the server refuses (expired, key not
     *        its own, …) is an ApiError 422 `invalid`.
     * @param string|null $signatureScheme `hmac-sha256` (the default) or `ed25519`: v1a
     *        signatures, checked with the answer's `public_key` (no secret)
     * @param string|null $filter a CEL expression over `event`, `data` and `subjects` (at
     *        most 1024 bytes, e.g. `data.amount > 1000`): an event it does not match makes
     *        no attempt for this endpoint. One that does not parse or check is an ApiError
     *        422 `invalid` saying where (`… at 1:14`).
     * @param array<string, mixed>|null $destination instead of `$url` (pass null), a broker
     *        to publish to: `['type' => 'redis', 'url' => 'redis://:pw@host:6379/0',
     *        'stream' => 'orders']` or `['type' => 'nats', 'url' => 'nats://host:4222',
     *        'subject' => 'orders.paid']`; its credentials are never returned
     */
    public function create(?string $url, array $events, ?string $description = null, ?array $headers = null, ?int $rateLimit = null, ?array $clientCertificate = null, ?string $signatureScheme = null, ?string $filter = null, ?array $destination = null): WebhookModel
    {
        $body = array_filter(['url' => $url, 'events' => $events, 'description' => $description, 'headers' => $headers, 'rate_limit' => $rateLimit, 'client_certificate' => $clientCertificate, 'signature_scheme' => $signatureScheme, 'filter' => $filter, 'destination' => $destination], static fn ($v) => $v !== null);
        return WebhookModel::fromArray($this->t->request('POST', '/webhooks', body: $body, retrySafe: false));
    }

    /** @return list<WebhookModel> */
    public function list(): array
    {
        $body = $this->t->request('GET', '/webhooks');
        return array_map(static fn (array $w) => WebhookModel::fromArray($w), $body['data']);
    }

    public function get(int $id): WebhookModel
    {
        return WebhookModel::fromArray($this->t->request('GET', Client::path('webhooks', $id)));
    }

    /**
     * Changes the given fields only (`url`, `events`, `description`, `enabled`, `headers`,
     * `rate_limit`, `client_certificate`, `signature_scheme`, `filter`); `rate_limit` null
     * lifts the limit, `client_certificate` null removes the certificate and `filter` null
     * removes the filter, while an absent key leaves each as it is. A new `signature_scheme`
     * signs alongside the old for 24 hours; a switch to `hmac-sha256` answers the new
     * `secret`. Retried like a GET: it sets values, so a repeat leaves the same endpoint.
     *
     * @param array{url?: string, events?: list<string>, description?: string, enabled?: bool, headers?: array<string, string>, rate_limit?: int|null, client_certificate?: array{cert: string, key: string}|null, signature_scheme?: string, filter?: string|null} $changes
     */
    public function update(int $id, array $changes): WebhookModel
    {
        return WebhookModel::fromArray($this->t->request('PATCH', Client::path('webhooks', $id), body: (object) $changes));
    }

    public function delete(int $id): void
    {
        $this->t->request('DELETE', Client::path('webhooks', $id));
    }

    /** A new secret; the old one stays valid for a while. Not retried on 5xx: a repeat would rotate twice. */
    public function rotateSecret(int $id): WebhookModel
    {
        return WebhookModel::fromArray($this->t->request('POST', Client::path('webhooks', $id, 'rotate-secret'), retrySafe: false));
    }

    /**
     * Replays, once each, the endpoint's (event, endpoint) pairs still failing among the
     * attempts made from `$since` to `$until` (default: now): failed or dead-lettered, with
     * no success and nothing waiting. Times are RFC 3339 strings or dates. Answers the
     * replay at once (it may be empty: `total` 0); follow it with `replays->get`. Not
     * retried on 5xx: a repeat would start a second replay.
     */
    public function recover(int $id, string|\DateTimeInterface $since, string|\DateTimeInterface|null $until = null): Replay
    {
        $body = array_filter(['since' => Client::since($since), 'until' => Client::since($until)], static fn ($v) => $v !== null);
        return Replay::fromArray($this->t->request('POST', Client::path('webhooks', $id, 'recover'), body: $body, retrySafe: false));
    }
}
