<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\ApiError;
use Posthorn\Client;
use Posthorn\Model\ClientCertificate;
use Posthorn\Model\DeliveryDetail;
use Posthorn\Model\EventTypeSchema;
use Posthorn\Model\FilteredOut;
use Posthorn\Webhook;

/** Against a real `posthorn serve` on a fresh database (started by sdk/test.sh). */
final class ServerTest extends TestCase
{
    /** Models by the name of their schema in /public/v1/openapi.json. */
    private const MODELS = [
        'Webhook' => 'Webhook',
        'ClientCertificateOut' => 'ClientCertificate',
        'Destination' => 'Destination',
        'EventAccepted' => 'EventAccepted',
        'Event' => 'Event',
        'FilteredOut' => 'FilteredOut',
        'Delivery' => 'Delivery',
        'DeliveryDetail' => 'DeliveryDetail',
        'Replay' => 'Replay',
        'Erasure' => 'Erasure',
        'EventTypeSchema' => 'EventTypeSchema',
    ];

    /** @var array{cert: string, key: string, other: string}|null */
    private static ?array $pem = null;

    private function client(string $keyVar = 'POSTHORN_TEST_KEY_BUSINESS'): Client
    {
        return new Client(Env::get($this, $keyVar), Env::get($this, 'POSTHORN_TEST_URL'));
    }

    /** The README's receiver under `php -S`; returns [process, its directory, its log file]. */
    private function startReceiver(string $secret, int $port): array
    {
        preg_match_all('/```php\n(.*?)```/s', file_get_contents(__DIR__ . '/../README.md'), $m);
        $code = current(array_filter($m[1], fn ($b) => str_contains($b, 'getallheaders()')));
        $dir = sys_get_temp_dir() . '/posthorn-php-receiver-' . bin2hex(random_bytes(6));
        mkdir("{$dir}/vendor", 0777, true);
        file_put_contents("{$dir}/receiver.php", $code);
        file_put_contents("{$dir}/vendor/autoload.php", "<?php require '" . dirname(__DIR__) . "/autoload.php';\n");
        $log = "{$dir}/server.log";
        $env = ['POSTHORN_WEBHOOK_SECRET' => $secret, 'TMPDIR' => $dir, 'PATH' => getenv('PATH')];
        $proc = proc_open([PHP_BINARY, '-S', "127.0.0.1:{$port}", 'receiver.php'], [1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes, $dir, $env);
        Env::waitFor('the receiver', fn () => @fsockopen('127.0.0.1', $port) !== false, 20);
        return [$proc, $dir, $log];
    }

    private static function handled(string $log, string $eventId): int
    {
        return preg_match_all('/handled \S+ ' . preg_quote($eventId, '/') . '$/m', (string) @file_get_contents($log));
    }

    private static function only(array $pairs, string $prefix): array
    {
        return array_values(array_filter($pairs, fn ($p) => str_starts_with(strtolower($p[0]), $prefix)));
    }

    public function testADeliveryReachesTheReadmeReceiverAndVerifies(): void
    {
        $client = $this->client();
        $port = Env::freePort();
        $hook = $client->webhooks->create("http://127.0.0.1:{$port}/webhooks", ['order.paid'], 'php receiver');
        $this->assertStringStartsWith('whsec_', $hook->secret);
        [$proc, $dir, $log] = $this->startReceiver($hook->secret, $port);
        try {
            $sent = $client->events->send('order.paid', ['order' => 42, 'note' => 'ünïcode']);
            $this->assertStringStartsWith('evt_', $sent->id);
            $this->assertSame(1, $sent->deliveries);
            Env::waitFor('the receiver to handle the event', fn () => self::handled($log, $sent->id));
            $first = Env::waitFor('the attempt to succeed', function () use ($client, $sent) {
                foreach ($client->deliveries->list(eventId: $sent->id)->data as $d) {
                    if ($d->status === 'succeeded') {
                        return $d;
                    }
                }
                return null;
            });
            $this->assertSame([1, 204, $hook->id], [$first->attempt, $first->response_status, $first->endpoint_id]);

            // What the server sent verifies under each scheme on its own.
            $detail = $client->deliveries->get($first->id);
            $this->assertInstanceOf(DeliveryDetail::class, $detail);
            foreach (['webhook-', 'x-botix-'] as $prefix) {
                $event = Webhook::verify($detail->payload, self::only($detail->request_headers, $prefix), $hook->secret);
                $this->assertSame($sent->id, $event['event_id']);
                $this->assertSame('ünïcode', $event['data']['note']);
            }

            // A manual retry is the same event again: answered 2xx, handled once.
            $again = $client->deliveries->retry($first->id);
            $this->assertSame(2, $again->attempt);
            Env::waitFor('the retry to succeed', fn () => $client->deliveries->get($again->id)->status === 'succeeded');
            $this->assertSame(1, self::handled($log, $sent->id));

            // After a rotation deliveries carry both signatures: the receiver, still on the
            // old secret, accepts them, and so does the new secret.
            $rotated = $client->webhooks->rotateSecret($hook->id);
            $this->assertNotSame($hook->secret, $rotated->secret);
            $later = $client->events->send('order.paid', ['order' => 43]);
            Env::waitFor('the post-rotation event', fn () => self::handled($log, $later->id));
            $done = Env::waitFor('its attempt', function () use ($client, $later) {
                foreach ($client->deliveries->iter(eventId: $later->id) as $d) {
                    if ($d->status === 'succeeded') {
                        return $d;
                    }
                }
                return null;
            });
            $d = $client->deliveries->get($done->id);
            Webhook::verify($d->payload, $d->request_headers, $rotated->secret);

            // A forged request is refused by the receiver.
            $ctx = stream_context_create(['http' => ['method' => 'POST', 'ignore_errors' => true, 'content' => '{"event_id":"evt_forged"}',
                'header' => "Content-Type: application/json\r\nwebhook-id: evt_forged\r\nwebhook-timestamp: " . time() . "\r\nwebhook-signature: v1,AAAA\r\n"]]);
            file_get_contents("http://127.0.0.1:{$port}/webhooks", false, $ctx);
            $this->assertStringContainsString(' 400 ', $http_response_header[0]);
        } finally {
            proc_terminate($proc);
            proc_close($proc);
            exec('rm -rf ' . escapeshellarg($dir));
            $client->webhooks->delete($hook->id);
        }
    }

    public function testAnEd25519EndpointsDeliveriesVerifyWithItsPublicKey(): void
    {
        $client = $this->client();
        $port = Env::freePort();
        $hook = $client->webhooks->create("http://127.0.0.1:{$port}/webhooks", ['order.paid'], signatureScheme: 'ed25519');
        $this->assertSame(['ed25519', null], [$hook->signature_scheme, $hook->secret]);
        $this->assertStringStartsWith('whpk_', $hook->public_key);
        // The README's receiver, given the public key where the secret would go.
        [$proc, $dir, $log] = $this->startReceiver($hook->public_key, $port);
        try {
            $sent = $client->events->send('order.paid', ['order' => 44, 'note' => 'ünïcode']);
            Env::waitFor('the receiver to handle the event', fn () => self::handled($log, $sent->id));
            $done = Env::waitFor('the attempt to succeed', function () use ($client, $sent) {
                foreach ($client->deliveries->list(eventId: $sent->id)->data as $d) {
                    if ($d->status === 'succeeded') {
                        return $d;
                    }
                }
                return null;
            });
            $detail = $client->deliveries->get($done->id);
            $names = array_column(array_map(fn ($p) => [strtolower($p[0]), $p[1]], $detail->request_headers), 1, 0);
            $this->assertArrayNotHasKey('x-botix-signature', $names);
            foreach (explode(' ', $names['webhook-signature']) as $entry) {
                $this->assertStringStartsWith('v1a,', $entry);
            }
            $this->assertSame($sent->id, Webhook::verify($detail->payload, $detail->request_headers, $hook->public_key)['event_id']);
        } finally {
            proc_terminate($proc);
            proc_close($proc);
            exec('rm -rf ' . escapeshellarg($dir));
            $client->webhooks->delete($hook->id);
        }
    }

    public function testWebhooksCrudAndApiErrors(): void
    {
        $client = $this->client();
        $hook = $client->webhooks->create('https://example.com/crud', ['*'], headers: ['X-Token' => 't']);
        $this->assertSame([['X-Token'], ['*']], [$hook->headers, $hook->events]);
        $changed = $client->webhooks->update($hook->id, ['events' => ['a.b', 'c.d'], 'enabled' => false, 'description' => 'off']);
        $this->assertSame([['a.b', 'c.d'], false, 'off', null], [$changed->events, $changed->enabled, $changed->description, $changed->secret]);
        $this->assertContains($hook->id, array_map(fn ($w) => $w->id, $client->webhooks->list()));
        $this->assertEquals($changed, $client->webhooks->get($hook->id));
        $client->webhooks->delete($hook->id);
        foreach ([[fn () => $client->webhooks->get($hook->id), 404, 'not_found'], [fn () => $client->webhooks->create('ftp://example.com', ['*']), 422, 'invalid']] as [$call, $status, $code]) {
            try {
                $call();
                $this->fail("expected {$status}");
            } catch (ApiError $e) {
                $this->assertSame([$status, $code], [$e->status, $e->errorCode]);
            }
        }
    }

    /**
     * A self-signed certificate (CN=sdk-client, 30 days), its key and a key of another, made
     * once by the openssl command line so the tests need no crypto extension.
     *
     * @return array{cert: string, key: string, other: string}
     */
    private static function pem(): array
    {
        if (self::$pem !== null) {
            return self::$pem;
        }
        if (trim((string) shell_exec('command -v openssl')) === '') {
            self::fail('openssl is not on PATH: the client certificate tests need it');
        }
        $dir = sys_get_temp_dir() . '/posthorn-php-pem-' . bin2hex(random_bytes(6));
        mkdir($dir);
        $curve = ['-pkeyopt', 'ec_paramgen_curve:prime256v1'];
        try {
            foreach ([
                ['req', '-x509', '-newkey', 'ec', ...$curve, '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '30', '-subj', '/CN=sdk-client'],
                ['genpkey', '-algorithm', 'EC', ...$curve, '-out', 'other.pem'],
            ] as $args) {
                $proc = proc_open(['openssl', ...$args], [1 => ['file', '/dev/null', 'w'], 2 => ['pipe', 'w']], $pipes, $dir);
                $err = stream_get_contents($pipes[2]);
                if (proc_close($proc) !== 0) {
                    self::fail("openssl {$args[0]} failed: {$err}");
                }
            }
            return self::$pem = array_map(fn ($name) => file_get_contents("{$dir}/{$name}.pem"), ['cert' => 'cert', 'key' => 'key', 'other' => 'other']);
        } finally {
            exec('rm -rf ' . escapeshellarg($dir));
        }
    }

    public function testAClientCertificateIsSetShownAndRemoved(): void
    {
        $client = $this->client();
        $pem = self::pem();
        $pair = ['cert' => $pem['cert'], 'key' => $pem['key']];
        $hook = $client->webhooks->create('https://example.com/mtls-php', ['*'], clientCertificate: $pair);
        try {
            $shown = $hook->client_certificate;
            $this->assertInstanceOf(ClientCertificate::class, $shown);
            $this->assertSame('CN=sdk-client', $shown->subject);
            $days = ($shown->not_after->getTimestamp() - time()) / 86400;
            $this->assertTrue($days > 28 && $days <= 30, (string) $days);
            $this->assertEquals($shown, $client->webhooks->get($hook->id)->client_certificate);
            // Absent leaves it as it is; null removes it.
            $this->assertEquals($shown, $client->webhooks->update($hook->id, ['description' => 'kept'])->client_certificate);
            $this->assertNull($client->webhooks->update($hook->id, ['client_certificate' => null])->client_certificate);
            $this->assertNull($client->webhooks->get($hook->id)->client_certificate);
            $this->assertEquals($shown, $client->webhooks->update($hook->id, ['client_certificate' => $pair])->client_certificate);
        } finally {
            $client->webhooks->delete($hook->id);
        }
        try {
            $client->webhooks->create('https://example.com/mtls-php', ['*'], clientCertificate: ['cert' => $pem['cert'], 'key' => $pem['other']]);
            $this->fail('expected 422');
        } catch (ApiError $e) {
            $this->assertSame(
                [422, 'invalid', 'client_certificate: the key does not belong to the first certificate'],
                [$e->status, $e->errorCode, $e->apiMessage],
            );
        }
    }

    public function testAFilterDecidesWhichEventsAnEndpointGets(): void
    {
        $client = $this->client();
        $kind = 'payment.filtered_php';
        // Refused when saved, the message saying where.
        try {
            $client->webhooks->create('https://example.com/filtered-php', [$kind], filter: 'data.amount >');
            $this->fail('expected 422');
        } catch (ApiError $e) {
            $this->assertSame([422, 'invalid'], [$e->status, $e->errorCode]);
            $this->assertStringStartsWith('filter: ', $e->apiMessage);
            $this->assertStringContainsString('at 1:14', $e->apiMessage);
        }
        $hook = $client->webhooks->create('https://example.com/filtered-php', [$kind], filter: 'data.amount > 1000');
        try {
            $this->assertSame('data.amount > 1000', $hook->filter);
            $this->assertSame('data.amount > 1000', $client->webhooks->get($hook->id)->filter);
            try {
                $client->webhooks->update($hook->id, ['filter' => 'data.amount >']);
                $this->fail('expected 422');
            } catch (ApiError $e) {
                $this->assertSame([422, 'invalid'], [$e->status, $e->errorCode]);
            }

            // Too small: no attempt, and the event says which endpoint it skipped and why.
            $small = $client->events->send($kind, ['amount' => 5]);
            $this->assertSame(0, $small->deliveries);
            $got = $client->events->get($small->id);
            $this->assertSame(0, $got->deliveries);
            $this->assertCount(1, $got->filtered_out);
            $this->assertInstanceOf(FilteredOut::class, $got->filtered_out[0]);
            $this->assertSame([$hook->id, 'the filter was false'], [$got->filtered_out[0]->endpoint_id, $got->filtered_out[0]->reason]);
            $listed = Env::waitFor('the event in the list', function () use ($client, $kind, $small) {
                foreach ($client->events->list(type: $kind)->data as $e) {
                    if ($e->id === $small->id) {
                        return $e;
                    }
                }
                return null;
            });
            $this->assertEquals($got->filtered_out, $listed->filtered_out);
            $big = $client->events->send($kind, ['amount' => 5000]);
            $this->assertSame(1, $big->deliveries);
            $gotBig = $client->events->get($big->id);
            $this->assertSame([1, []], [$gotBig->deliveries, $gotBig->filtered_out]);

            // Absent leaves it as it is; null removes it.
            $this->assertSame('data.amount > 1000', $client->webhooks->update($hook->id, ['description' => 'kept'])->filter);
            $this->assertSame('data.amount > 10', $client->webhooks->update($hook->id, ['filter' => 'data.amount > 10'])->filter);
            $this->assertNull($client->webhooks->update($hook->id, ['filter' => null])->filter);
            $this->assertNull($client->webhooks->get($hook->id)->filter);
            $this->assertSame(1, $client->events->send($kind, ['amount' => 5])->deliveries);
        } finally {
            $client->webhooks->delete($hook->id);
        }
    }

    public function testAnEventTypesSchemaRefusesDataThatFailsIt(): void
    {
        $client = $this->client();
        $kind = 'order.paid';
        $schema = ['type' => 'object', 'required' => ['amount'], 'properties' => ['amount' => ['type' => 'integer', 'minimum' => 1]]];
        try {
            $first = $client->eventTypes->setSchema($kind, $schema);
            $this->assertInstanceOf(EventTypeSchema::class, $first);
            $this->assertSame([$kind, 1, $schema], [$first->event, $first->version, $first->schema]);
            $this->assertInstanceOf(\DateTimeImmutable::class, $first->updated_at);
            $this->assertSame($schema, $client->eventTypes->getSchema($kind));

            // Data that fails it is refused, the message naming the path and the rule.
            try {
                $client->events->send($kind, ['amount' => 0]);
                $this->fail('expected 422');
            } catch (ApiError $e) {
                $this->assertSame([422, 'invalid'], [$e->status, $e->errorCode]);
                $this->assertStringStartsWith('data.amount:', $e->apiMessage);
                $this->assertStringContainsString('minimum', $e->apiMessage);
            }
            $this->assertStringStartsWith('evt_', $client->events->send($kind, ['amount' => 5])->id);

            $again = $client->eventTypes->setSchema($kind, $schema);
            $this->assertSame([2, $schema], [$again->version, $again->schema]);
            $this->assertGreaterThanOrEqual($first->updated_at, $again->updated_at);
            try {  // nothing is fetched: only `#…` references
                $client->eventTypes->setSchema($kind, ['$ref' => 'https://example.com/x.json']);
                $this->fail('expected 422');
            } catch (ApiError $e) {
                $this->assertSame([422, 'invalid'], [$e->status, $e->errorCode]);
                $this->assertStringStartsWith('schema', $e->apiMessage);
            }
            $this->assertSame($schema, $client->eventTypes->getSchema($kind));

            $client->eventTypes->deleteSchema($kind);
            try {
                $client->eventTypes->getSchema($kind);
                $this->fail('expected 404');
            } catch (ApiError $e) {
                $this->assertSame([404, 'not_found'], [$e->status, $e->errorCode]);
            }
            $this->assertStringStartsWith('evt_', $client->events->send($kind, ['amount' => 0])->id);
        } finally {
            // Other tests send `order.paid` events of their own shape.
            try {
                $client->eventTypes->deleteSchema($kind);
            } catch (ApiError $e) {
                $this->assertSame(404, $e->status);
            }
        }

        // `{}` stays an object when the schema is given as JSON text and read as objects.
        $json = '{"type":"object","properties":{},"additionalProperties":{"type":"integer"}}';
        $kept = $client->eventTypes->setSchema('order.schema_php', $json);
        try {
            $this->assertSame(1, $kept->version);
            $this->assertEquals(json_decode($json), $client->eventTypes->getSchema('order.schema_php', associative: false));
            $this->assertSame(2, $client->eventTypes->setSchema('order.schema_php', $client->eventTypes->getSchema('order.schema_php', associative: false))->version);
        } finally {
            $client->eventTypes->deleteSchema('order.schema_php');
        }
    }

    public function testAnOrderingKeyIsSentAndReadBack(): void
    {
        $client = $this->client();
        $hook = $client->webhooks->create('https://example.com/ordered-php', ['order.keyed_php']);
        $sent = $client->events->send('order.keyed_php', ['n' => 1], orderingKey: 'customer-9');
        $this->assertSame('customer-9', $client->events->get($sent->id)->ordering_key);
        $page = $client->deliveries->list(orderingKey: 'customer-9');
        // Its attempts (a retry may already be queued: example.com does not answer here).
        $this->assertNotEmpty($page->data);
        $this->assertSame([$sent->id . ' customer-9'], array_values(array_unique(array_map(fn ($d) => $d->event_id . ' ' . $d->ordering_key, $page->data))));
        $client->webhooks->delete($hook->id);
    }

    public function testTheIteratorWalks250EventsEachExactlyOnce(): void
    {
        $client = $this->client();
        $kind = 'walk.php_' . time();
        $sent = [];
        for ($n = 0; $n < 250; $n++) {
            $sent[] = $client->events->send($kind, ['n' => $n])->id;
        }
        $this->assertCount(250, array_unique($sent));
        $first = $client->events->list(type: $kind, limit: 100);
        $this->assertCount(100, $first->data);
        $this->assertTrue($first->has_more);

        $it = $client->events->iter(type: $kind, pageSize: 100);
        $seen = array_map(fn ($e) => $e->id, iterator_to_array($it, false));
        // Rows of transactions still open are held back; go on from the stored cursor.
        $deadline = microtime(true) + 30;
        while (count($seen) < 250 && microtime(true) < $deadline) {
            usleep(500_000);
            $it = $client->events->iter(cursor: $it->cursor, type: $kind, pageSize: 100);
            $seen = array_merge($seen, array_map(fn ($e) => $e->id, iterator_to_array($it, false)));
        }
        $this->assertCount(250, $seen);
        $this->assertEqualsCanonicalizing($sent, $seen);
        $this->assertSame(['n' => 7], $client->events->get($sent[7])->data);
        $this->assertSame([], iterator_to_array($client->events->iter(cursor: $it->cursor, type: $kind), false));
    }

    public function testSixtyCallsOnATrialKeyAllSucceedAndNoneGoesEarly(): void
    {
        $url = Env::get($this, 'POSTHORN_TEST_URL');
        // Both at once, on two trial projects, as child processes: the default client, which
        // waits for the reset when the quota is spent, and one that only reacts to 429s.
        $runs = [];
        foreach ([['POSTHORN_TEST_KEY_TRIAL_A', 1], ['POSTHORN_TEST_KEY_TRIAL_B', 0]] as [$var, $threshold]) {
            $proc = proc_open([PHP_BINARY, __DIR__ . '/sixty_calls.php', $url, Env::get($this, $var), (string) $threshold], [1 => ['pipe', 'w']], $pipes);
            $runs[] = [$proc, $pipes[1]];
        }
        [$p, $r] = array_map(function ($run) {
            $out = stream_get_contents($run[1]);
            $this->assertSame(0, proc_close($run[0]), 'the client process failed');
            return json_decode($out, true);
        }, $runs);
        foreach ([[$p, true], [$r, false]] as [$run, $proactive]) {
            $this->assertCount(60, array_unique($run['ids']));
            $statuses = array_column($run['log'], 'status');
            $this->assertSame(60, count(array_keys($statuses, 202, true)));
            $this->assertSame([], array_diff($statuses, [202, 429]));
            $log = $run['log'];
            for ($i = 1; $i < count($log); $i++) {
                [$prev, $next] = [$log[$i - 1], $log[$i]];
                if ($prev['status'] === 429) {
                    $this->assertGreaterThanOrEqual($prev['receivedAt'] + (float) $prev['headers']['retry-after'], $next['sentAt'], 'sent before Retry-After');
                }
                if ($proactive && ($prev['headers']['x-ratelimit-remaining'] ?? null) === '0') {
                    $this->assertGreaterThanOrEqual((float) $prev['headers']['x-ratelimit-reset'], $next['sentAt'], 'sent before the reset');
                }
            }
        }
        // Once the default client has seen the quota it never earns a 429.
        $firstOk = array_search(202, array_column($p['log'], 'status'), true);
        $this->assertNotContains(429, array_slice(array_column($p['log'], 'status'), $firstOk), 'the default client earned a 429');
        $this->assertContains(429, array_column($r['log'], 'status'), '60 calls at 30/min must meet a 429');
    }

    public function testTheModelsMatchTheOpenapiDocument(): void
    {
        $doc = json_decode(file_get_contents(Env::get($this, 'POSTHORN_TEST_URL') . '/public/v1/openapi.json'), true);
        foreach (self::MODELS as $schemaName => $name) {
            [$props, $required] = self::schemaProperties($doc, ['$ref' => "#/components/schemas/{$schemaName}"]);
            $class = new \ReflectionClass("Posthorn\\Model\\{$name}");
            $fields = [];
            foreach ($class->getProperties(\ReflectionProperty::IS_PUBLIC) as $prop) {
                $fields[$prop->getName()] = $prop;
            }
            $this->assertEqualsCanonicalizing(array_keys($props), array_keys($fields), $name);
            foreach ($props as $field => $schema) {
                $expected = self::jsonTypes($doc, $schema);
                if (!in_array($field, $required, true)) {  // an absent field reads as null
                    $expected[] = 'null';
                    $this->assertTrue($fields[$field]->hasDefaultValue() && $fields[$field]->getDefaultValue() === null, "{$name}.{$field} may be absent");
                }
                $this->assertEqualsCanonicalizing(array_unique($expected), self::phpTypes($fields[$field]->getType()), "{$name}.{$field}");
            }
        }
        // Page(data, has_more, next_cursor) is the envelope {data, meta{next_cursor, has_more}}.
        $page = array_map(fn ($p) => $p->getName(), (new \ReflectionClass(\Posthorn\Model\Page::class))->getProperties());
        foreach (['EventPage', 'DeliveryPage'] as $name) {
            [$props, $required] = self::schemaProperties($doc, ['$ref' => "#/components/schemas/{$name}"]);
            $this->assertEqualsCanonicalizing(['data', 'meta'], $required);
            [$meta] = self::schemaProperties($doc, $props['meta']);
            $this->assertEqualsCanonicalizing($page, array_merge(['data'], array_keys($meta)));
        }
    }

    private static function schemaProperties(array $doc, array $schema): array
    {
        if (isset($schema['$ref'])) {
            return self::schemaProperties($doc, $doc['components']['schemas'][basename($schema['$ref'])]);
        }
        $props = $schema['properties'] ?? [];
        $required = $schema['required'] ?? [];
        foreach ($schema['allOf'] ?? [] as $part) {
            [$p, $r] = self::schemaProperties($doc, $part);
            $props += $p;
            $required = array_merge($required, $r);
        }
        return [$props, $required];
    }

    /** JSON types as the models spell them: a nested object names its model, dates stay strings. */
    private static function jsonTypes(array $doc, array $prop): array
    {
        if (isset(self::MODELS[basename($prop['$ref'] ?? '')])) {
            return ['object ' . self::MODELS[basename($prop['$ref'])]];
        }
        if (isset($prop['$ref'])) {
            return self::jsonTypes($doc, $doc['components']['schemas'][basename($prop['$ref'])]);
        }
        if (isset($prop['oneOf'])) {
            return array_merge(...array_map(fn ($p) => self::jsonTypes($doc, $p), $prop['oneOf']));
        }
        if (!isset($prop['type'])) {
            return ['any'];
        }
        // JSON objects decode to PHP arrays.
        return array_map(fn ($t) => match (true) {
            $t === 'string' && ($prop['format'] ?? '') === 'date-time' => 'date-time',
            $t === 'object' => 'array',
            default => $t,
        }, (array) $prop['type']);
    }

    private static function phpTypes(\ReflectionNamedType $type): array
    {
        $name = $type->getName();
        if ($name === 'mixed') {
            return ['any'];
        }
        $map = ['int' => 'integer', 'string' => 'string', 'bool' => 'boolean', 'array' => 'array', \DateTimeImmutable::class => 'date-time'];
        $json = $map[$name] ?? 'object ' . substr($name, strlen('Posthorn\\Model\\'));
        return $type->allowsNull() ? [$json, 'null'] : [$json];
    }
}
