<?php

declare(strict_types=1);

namespace Posthorn;

/**
 * Posthorn's operator API (`/operator/v1`): the platform that runs Posthorn for its
 * customers makes their projects, hands out the projects' API keys, reads their usage and
 * opens the portal for them. Authenticated by an operator key (`pho_…`, made by
 * `posthorn create-operator-key`). Retries as Client does: 429s wait out Retry-After; 5xx
 * and connection errors are retried only for calls safe to repeat (GET, PATCH, DELETE).
 *
 *     $op = new Posthorn\Operator('pho_…', 'https://posthorn.example.com');
 *     $project = $op->projects->create('Acme', uid: 'customer-42');
 */
final class Operator
{
    private const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';

    public readonly Projects $projects;
    public readonly ApiKeys $apiKeys;
    public readonly UsageReports $usage;
    public readonly PortalLinks $portalLinks;
    public readonly Transport $transport;

    /**
     * @param array{timeout?: float, maxRetries?: int, backoffBase?: float, backoffCap?: float,
     *              maxWait?: float, onResponse?: callable(Attempt): void} $options
     */
    public function __construct(string $operatorKey, ?string $baseUrl = null, array $options = [])
    {
        if ($operatorKey === '') {
            throw new \InvalidArgumentException('the operator key is required');
        }
        $base = rtrim($baseUrl ?? (getenv('POSTHORN_BASE_URL') ?: self::DEFAULT_BASE_URL), '/');
        if (!str_ends_with($base, '/operator/v1')) {
            $base .= '/operator/v1';
        }
        $policy = new RetryPolicy(
            $options['maxRetries'] ?? 5,
            $options['backoffBase'] ?? 0.5,
            $options['backoffCap'] ?? 30.0,
            $options['maxWait'] ?? 120.0,
            1,
        );
        $this->transport = new Transport($operatorKey, $base, $options['timeout'] ?? 30.0, $policy, 'posthorn-php/' . Client::VERSION, $options['onResponse'] ?? null);
        $this->projects = new Projects($this->transport);
        $this->apiKeys = new ApiKeys($this->transport);
        $this->usage = new UsageReports($this->transport);
        $this->portalLinks = new PortalLinks($this->transport);
    }

    /**
     * @internal A UTC day as `YYYY-MM-DD`: a string as given, or a date's day in UTC.
     */
    public static function day(string|\DateTimeInterface|null $day): ?string
    {
        return $day instanceof \DateTimeInterface
            ? \DateTimeImmutable::createFromInterface($day)->setTimezone(new \DateTimeZone('UTC'))->format('Y-m-d')
            : $day;
    }
}
