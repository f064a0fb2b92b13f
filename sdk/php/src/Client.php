<?php

declare(strict_types=1);

namespace Posthorn;

use Posthorn\Model\Page;

/**
 * Posthorn's public API, one property per resource. Calls back off on 429 (honouring
 * Retry-After), wait for the minute's reset when the quota is spent, and retry 5xx and
 * connection errors for calls safe to repeat.
 *
 *     $client = new Posthorn\Client('phk_…', 'https://posthorn.example.com');
 */
final class Client
{
    public const VERSION = '0.1.0';
    private const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';

    public readonly Webhooks $webhooks;
    public readonly Events $events;
    public readonly Deliveries $deliveries;
    public readonly Replays $replays;
    public readonly Erasures $erasures;
    public readonly EventTypes $eventTypes;
    public readonly Transport $transport;

    /**
     * @param array{timeout?: float, maxRetries?: int, backoffBase?: float, backoffCap?: float,
     *              maxWait?: float, rateLimitThreshold?: int, onResponse?: callable(Attempt): void} $options
     */
    public function __construct(string $apiKey, ?string $baseUrl = null, array $options = [])
    {
        if ($apiKey === '') {
            throw new \InvalidArgumentException('the API key is required');
        }
        $base = rtrim($baseUrl ?? (getenv('POSTHORN_BASE_URL') ?: self::DEFAULT_BASE_URL), '/');
        if (!str_ends_with($base, '/public/v1')) {
            $base .= '/public/v1';
        }
        $policy = new RetryPolicy(
            $options['maxRetries'] ?? 5,
            $options['backoffBase'] ?? 0.5,
            $options['backoffCap'] ?? 30.0,
            $options['maxWait'] ?? 120.0,
            $options['rateLimitThreshold'] ?? 1,
        );
        $this->transport = new Transport($apiKey, $base, $options['timeout'] ?? 30.0, $policy, 'posthorn-php/' . self::VERSION, $options['onResponse'] ?? null);
        $this->webhooks = new Webhooks($this->transport);
        $this->events = new Events($this->transport);
        $this->deliveries = new Deliveries($this->transport);
        $this->replays = new Replays($this->transport);
        $this->erasures = new Erasures($this->transport);
        $this->eventTypes = new EventTypes($this->transport);
    }

    /** @internal */
    public static function path(string|int ...$parts): string
    {
        return implode('', array_map(static fn ($p) => '/' . rawurlencode((string) $p), $parts));
    }

    /** @internal */
    public static function since(string|\DateTimeInterface|null $since): ?string
    {
        return $since instanceof \DateTimeInterface
            ? \DateTimeImmutable::createFromInterface($since)->setTimezone(new \DateTimeZone('UTC'))->format('Y-m-d\TH:i:s.u\Z')
            : $since;
    }

    /**
     * @internal
     * @param class-string<Model\Model> $class
     */
    public static function page(Transport $t, string $path, array $query, string $class): Page
    {
        $body = $t->request('GET', $path, $query);
        return new Page(
            array_map(static fn (array $item) => $class::fromArray($item), $body['data']),
            (bool) $body['meta']['has_more'],
            (string) $body['meta']['next_cursor'],
        );
    }
}
