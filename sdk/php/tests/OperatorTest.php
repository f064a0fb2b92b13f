<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\ApiError;
use Posthorn\Client;
use Posthorn\Model\AttemptCounts;
use Posthorn\Model\Brand;
use Posthorn\Model\EffectiveLimits;
use Posthorn\Operator;

/** The operator client against a real `posthorn serve` on a fresh database (started by sdk/test.sh). */
final class OperatorTest extends TestCase
{
    /** Models by the name of their schema in /operator/v1/openapi.json. */
    private const MODELS = [
        'Project' => 'Project',
        'EffectiveLimits' => 'EffectiveLimits',
        'BrandOut' => 'Brand',
        'CreatedKey' => 'CreatedKey',
        'Usage' => 'Usage',
        'UsageDay' => 'UsageDay',
        'AttemptCounts' => 'AttemptCounts',
        'PortalLink' => 'PortalLink',
    ];

    private function operator(): Operator
    {
        return new Operator(Env::get($this, 'POSTHORN_OPERATOR_KEY'), Env::get($this, 'POSTHORN_TEST_URL'));
    }

    private static function unique(string $prefix): string
    {
        return $prefix . '-' . bin2hex(random_bytes(6));
    }

    private static function utcToday(): string
    {
        return gmdate('Y-m-d');
    }

    /** The call throws an ApiError of this status and code; returns the error. */
    private function refused(int $status, string $code, callable $call): ApiError
    {
        try {
            $call();
        } catch (ApiError $e) {
            $this->assertSame([$status, $code], [$e->status, $e->errorCode], $e->getMessage());
            return $e;
        }
        $this->fail("expected {$status} {$code}");
    }

    public function testAProjectFromCreationToDeletion(): void
    {
        $op = $this->operator();
        $base = Env::get($this, 'POSTHORN_TEST_URL');
        $uid = self::unique('php-customer');
        $project = $op->projects->create('PHP customer', uid: $uid, plan: 'business', limits: ['endpoints' => 5, 'concurrent_erasures' => 2],
            frameAncestors: ['https://app.example.com'], brand: ['name' => 'Acme', 'accent' => '#4f46e5']);
        $this->assertSame([$uid, 'PHP customer', 'business'], [$project->uid, $project->name, $project->plan]);
        $this->assertInstanceOf(EffectiveLimits::class, $project->limits);
        $this->assertSame(5, $project->limits->endpoints);
        $this->assertSame(2, $project->limits->concurrent_erasures);
        $this->assertSame(['https://app.example.com'], $project->frame_ancestors);
        $this->assertInstanceOf(Brand::class, $project->brand);
        $this->assertSame(['Acme', '#4f46e5', null], [$project->brand->name, $project->brand->accent, $project->brand->logo_url]);
        $this->assertInstanceOf(\DateTimeImmutable::class, $project->created_at);

        // Found by the operator's own id; an unknown one finds nothing.
        $this->assertEquals($project, $op->projects->find($uid));
        $this->assertEquals($project, $op->projects->get($project->id));
        $this->assertNull($op->projects->find(self::unique('php-nobody')));

        // Updated: only the fields given change; brand and frame_ancestors are replaced whole.
        $changed = $op->projects->update($project->id, [
            'name' => 'PHP customer, renamed',
            'frame_ancestors' => ['https://portal.example.com', 'http://localhost:8080'],
            'brand' => ['accent' => '#112233', 'logo_url' => 'https://cdn.example.com/logo.png'],
        ]);
        $this->assertSame('PHP customer, renamed', $changed->name);
        $this->assertSame(['https://portal.example.com', 'http://localhost:8080'], $changed->frame_ancestors);
        $this->assertSame([null, '#112233', 'https://cdn.example.com/logo.png'], [$changed->brand->name, $changed->brand->accent, $changed->brand->logo_url]);
        $this->assertSame([$uid, 'business'], [$changed->uid, $changed->plan]);
        $this->assertEquals($project->limits, $changed->limits);
        $this->assertEquals($changed, $op->projects->get($project->id));

        // A second project with the same uid conflicts; a wildcard is not an origin.
        $this->refused(409, 'conflict', fn () => $op->projects->create('PHP duplicate', uid: $uid));
        $bad = $this->refused(422, 'invalid', fn () => $op->projects->update($project->id, ['frame_ancestors' => ['https://*.example.com']]));
        $this->assertStringContainsString('frame_ancestors', $bad->apiMessage);
        $this->refused(422, 'invalid', fn () => $op->projects->create(self::unique('php-bad'), frameAncestors: ['https://*.example.com']));
        $this->assertEquals($changed, $op->projects->get($project->id));

        // A key minted for the project opens the public API, until it is revoked.
        $today = self::utcToday();
        $key = $op->apiKeys->create($project->id, 'php production');
        $this->assertSame('php production', $key->name);
        $this->assertStringStartsWith('phk_', $key->key);
        $this->assertStringStartsWith($key->prefix, $key->key);
        $client = new Client($key->key, $base);
        $hook = $client->webhooks->create('https://example.com/operator-php', ['order.paid']);
        $sent = $client->events->send('order.paid', ['order' => 1]);
        $this->assertSame(1, $sent->deliveries);
        $this->assertSame([$hook->id], array_map(fn ($w) => $w->id, $client->webhooks->list()));
        $op->apiKeys->revoke($project->id, $key->id);
        $this->refused(401, 'unauthorized', fn () => $client->events->send('order.paid', ['order' => 2]));
        $op->apiKeys->revoke($project->id, $key->id); // a repeat (as after a lost answer) is harmless
        $this->refused(404, 'not_found', fn () => $op->apiKeys->revoke($project->id, $key->id + 1_000_000_000));

        // Usage counts the event on its UTC day (given as text or as a date).
        $usage = $op->usage->get($project->id, since: $today, until: new \DateTimeImmutable('now', new \DateTimeZone('Asia/Tokyo')));
        $this->assertSame([$project->id, $today, self::utcToday()], [$usage->project_id, $usage->since, $usage->until]);
        $this->assertSame(1, $usage->events);
        $this->assertInstanceOf(AttemptCounts::class, $usage->attempts);
        $this->assertSame([[$today, 1]], array_map(fn ($d) => [$d->day, $d->events], $usage->days));
        $this->refused(422, 'invalid', fn () => $op->usage->get($project->id, since: 'yesterday'));

        // A portal link, single-use, expiring when asked.
        $before = microtime(true);
        $link = $op->portalLinks->create($project->id, 'user-7', 'member', email: 'ana@example.com', name: 'Ana', expiresIn: 600);
        $this->assertStringStartsWith("{$base}/portal/", $link->url);
        $lifetime = (float) $link->expires_at->format('U.u') - $before;
        $this->assertTrue($lifetime >= 590 && $lifetime <= 610, (string) $lifetime);
        $viewer = $op->portalLinks->create($project->id, 'user-8', 'viewer');
        $this->assertStringContainsString('/portal/', $viewer->url);
        $this->assertNotSame($link->url, $viewer->url);
        $this->refused(422, 'invalid', fn () => $op->portalLinks->create($project->id, 'user-9', 'admin'));

        // Deleted: gone at once, and so is everything under it.
        $op->projects->delete($project->id);
        $this->refused(404, 'not_found', fn () => $op->projects->get($project->id));
        $this->refused(404, 'not_found', fn () => $op->projects->delete($project->id));
        $this->refused(404, 'not_found', fn () => $op->usage->get($project->id));
        $this->assertNull($op->projects->find($uid));
    }

    public function testTheListPagesThroughEveryProjectOnce(): void
    {
        $op = $this->operator();
        $created = [];
        for ($i = 0; $i < 3; $i++) {
            $created[] = $op->projects->create(self::unique('php-page'))->id;
        }
        try {
            $first = $op->projects->list(limit: 2);
            $this->assertCount(2, $first->data);
            $this->assertTrue($first->has_more);
            $this->assertNotSame('', $first->next_cursor);
            $second = $op->projects->list(cursor: $first->next_cursor, limit: 2);
            $this->assertSame([], array_intersect(array_map(fn ($p) => $p->id, $first->data), array_map(fn ($p) => $p->id, $second->data)));

            $it = $op->projects->iter(pageSize: 2);
            $ids = array_map(fn ($p) => $p->id, iterator_to_array($it, false));
            $this->assertSame(count($ids), count(array_unique($ids)));
            $this->assertSame($created, array_values(array_intersect($ids, $created)));
            $this->assertNotNull($it->cursor);
            $later = array_map(fn ($p) => $p->id, iterator_to_array($op->projects->iter(cursor: $it->cursor, pageSize: 2), false));
            $this->assertSame([], array_intersect($later, $created));
            $this->refused(422, 'invalid', fn () => $op->projects->list(limit: 0));
        } finally {
            foreach ($created as $id) {
                $op->projects->delete($id);
            }
        }
    }

    public function testAWrongOperatorKeyIsRefused(): void
    {
        $base = Env::get($this, 'POSTHORN_TEST_URL');
        // A made-up key, and a project's API key, which is not an operator key either.
        foreach (['pho_' . str_repeat('x', 43), Env::get($this, 'POSTHORN_TEST_KEY_BUSINESS')] as $key) {
            $this->refused(401, 'unauthorized', fn () => (new Operator($key, $base))->projects->list());
        }
    }

    public function testTheOperatorModelsMatchTheOpenapiDocument(): void
    {
        $doc = json_decode(file_get_contents(Env::get($this, 'POSTHORN_TEST_URL') . '/operator/v1/openapi.json'), true);
        foreach (self::MODELS as $schemaName => $model) {
            $schema = self::resolve($doc, ['$ref' => "#/components/schemas/{$schemaName}"]);
            $required = $schema['required'] ?? [];
            $fields = [];
            foreach ((new \ReflectionClass("Posthorn\\Model\\{$model}"))->getProperties(\ReflectionProperty::IS_PUBLIC) as $prop) {
                $fields[$prop->getName()] = $prop;
            }
            $this->assertEqualsCanonicalizing(array_keys($schema['properties']), array_keys($fields), $model);
            foreach ($schema['properties'] as $field => $prop) {
                $expected = self::jsonTypes($prop);
                if (!in_array($field, $required, true)) {  // an absent field reads as null
                    $expected[] = 'null';
                    $this->assertTrue($fields[$field]->hasDefaultValue() && $fields[$field]->getDefaultValue() === null, "{$model}.{$field} may be absent");
                }
                $this->assertEqualsCanonicalizing(array_unique($expected), self::phpTypes($fields[$field]->getType()), "{$model}.{$field}");
            }
        }
        // Page(data, has_more, next_cursor) is the list's envelope as it is.
        $listing = self::resolve($doc, $doc['paths']['/projects']['get']['responses']['200']['content']['application/json']['schema']);
        $props = array_merge(...array_map(fn ($part) => array_keys(self::resolve($doc, $part)['properties']), $listing['allOf']));
        $page = array_map(fn ($p) => $p->getName(), (new \ReflectionClass(\Posthorn\Model\Page::class))->getProperties());
        $this->assertEqualsCanonicalizing($page, $props);
        // Every operation of the document is one the client calls.
        $ops = [];
        foreach ($doc['paths'] as $path => $item) {
            foreach (array_keys($item) as $method) {
                $ops[] = strtoupper($method) . " {$path}";
            }
        }
        $this->assertEqualsCanonicalizing([
            'POST /projects', 'GET /projects', 'GET /projects/{id}', 'PATCH /projects/{id}', 'DELETE /projects/{id}',
            'POST /projects/{id}/api-keys', 'DELETE /projects/{id}/api-keys/{key_id}',
            'GET /projects/{id}/usage', 'POST /projects/{id}/portal-links',
        ], $ops);
    }

    private static function resolve(array $doc, array $schema): array
    {
        while (isset($schema['$ref'])) {
            $schema = $doc['components']['schemas'][basename($schema['$ref'])];
        }
        return $schema;
    }

    /** JSON types as the models spell them: a nested object names its model, dates stay strings. */
    private static function jsonTypes(array $prop): array
    {
        if (isset($prop['$ref'])) {
            return ['object ' . self::MODELS[basename($prop['$ref'])]];
        }
        return array_map(fn ($t) => $t === 'string' && ($prop['format'] ?? '') === 'date-time' ? 'date-time' : $t, (array) $prop['type']);
    }

    private static function phpTypes(\ReflectionNamedType $type): array
    {
        $name = $type->getName();
        $map = ['int' => 'integer', 'string' => 'string', 'bool' => 'boolean', 'array' => 'array', \DateTimeImmutable::class => 'date-time'];
        $json = $map[$name] ?? 'object ' . substr($name, strlen('Posthorn\\Model\\'));
        return $type->allowsNull() ? [$json, 'null'] : [$json];
    }
}
