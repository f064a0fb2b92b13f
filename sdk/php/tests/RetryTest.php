<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\ApiConnectionError;
use Posthorn\ApiError;
use Posthorn\Client;
use Posthorn\Model\Erasure;
use Posthorn\RateLimitError;
use Posthorn\RetryPolicy;

/**
 * The retry rules, as pure arithmetic and against a scripted local HTTP server (`php -S`
 * with a router answering from a queue; the real server cannot be made to answer 503).
 */
final class RetryTest extends TestCase
{
    private const ERR = ['error' => ['code' => 'internal', 'message' => 'internal error']];
    private const HOOK = ['id' => 1, 'url' => 'https://x.test/h', 'events' => ['*'], 'description' => '', 'enabled' => true, 'created_at' => '2026-11-30T12:00:00.123456Z', 'headers' => []];

    private static $server;
    private static string $dir;
    private static int $port;

    public static function setUpBeforeClass(): void
    {
        self::$dir = sys_get_temp_dir() . '/posthorn-php-script-' . bin2hex(random_bytes(6));
        mkdir(self::$dir);
        file_put_contents(self::$dir . '/router.php', <<<'PHP'
            <?php
            $queue = json_decode(file_get_contents(__DIR__ . '/answers.json'), true);
            [$status, $headers, $body] = array_shift($queue);
            file_put_contents(__DIR__ . '/answers.json', json_encode($queue));
            file_put_contents(__DIR__ . '/seen.jsonl', json_encode([$_SERVER['REQUEST_METHOD'], $_SERVER['REQUEST_URI'], getallheaders(), json_decode(file_get_contents('php://input') ?: 'null', true)]) . "\n", FILE_APPEND);
            http_response_code($status);
            header('Content-Type: application/json');
            foreach ($headers as $k => $v) { header("$k: $v"); }
            echo json_encode($body);
            PHP);
        self::$port = Env::freePort();
        self::$server = proc_open([PHP_BINARY, '-S', '127.0.0.1:' . self::$port, 'router.php'], [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, self::$dir);
        Env::waitFor('the scripted server', fn () => @fsockopen('127.0.0.1', self::$port) !== false, 10);
    }

    public static function tearDownAfterClass(): void
    {
        proc_terminate(self::$server);
        proc_close(self::$server);
        array_map('unlink', glob(self::$dir . '/*'));
        rmdir(self::$dir);
    }

    /** @return array{Client, \ArrayObject} the client (recording waits instead of waiting) and its waits */
    private function scripted(array $answers): array
    {
        file_put_contents(self::$dir . '/answers.json', json_encode($answers));
        @unlink(self::$dir . '/seen.jsonl');
        $client = new Client('phk_test', 'http://127.0.0.1:' . self::$port);
        $sleeps = new \ArrayObject();
        $client->transport->sleep = fn (float $s) => $sleeps->append($s);
        return [$client, $sleeps];
    }

    private function seen(): array
    {
        $lines = @file(self::$dir . '/seen.jsonl') ?: [];
        return array_map(fn ($l) => json_decode($l, true), $lines);
    }

    public function testBackoffDoublesWithJitterAndIsCapped(): void
    {
        $p = new RetryPolicy(backoffBase: 1.0, backoffCap: 8.0);
        $this->assertEquals([0.5, 1, 2, 4, 4, 4], array_map(fn ($n) => $p->backoff($n, fn () => 0.0), range(0, 5)));
        $this->assertEquals([1, 2, 4, 8, 8, 8], array_map(fn ($n) => $p->backoff($n, fn () => 1.0), range(0, 5)));
        $this->assertLessThanOrEqual(8.0, $p->backoff(10_000));
    }

    public function testRetryAfterIsReadAsSecondsOrAnHttpDate(): void
    {
        $now = 1_700_000_000.0;
        $this->assertSame(7.0, RetryPolicy::parseRetryAfter('7', $now));
        $this->assertEqualsWithDelta(42, RetryPolicy::parseRetryAfter(gmdate(DATE_RFC7231, (int) $now + 42), $now), 1);
        $this->assertSame(0.0, RetryPolicy::parseRetryAfter(gmdate(DATE_RFC7231, (int) $now - 42), $now));
        $this->assertNull(RetryPolicy::parseRetryAfter('soon', $now));
        $this->assertNull(RetryPolicy::parseRetryAfter(null, $now));
    }

    public function testA429WaitsTheLargerOfRetryAfterAndTheBackoff(): void
    {
        $p = new RetryPolicy(backoffBase: 1.0, backoffCap: 30.0);
        $this->assertEquals(10.0, $p->retryWait(429, 0, 10.0, fn () => 1.0));
        $this->assertEquals(30.0, $p->retryWait(429, 5, 10.0, fn () => 1.0));
        $this->assertEquals(1.0, $p->retryWait(503, 0, 10.0, fn () => 1.0));
    }

    public function testAGetIsRetriedAfter5xx(): void
    {
        [$client, $sleeps] = $this->scripted([[503, [], self::ERR], [500, [], self::ERR], [200, [], self::HOOK]]);
        $hook = $client->webhooks->get(1);
        $this->assertSame(1, $hook->id);
        $this->assertInstanceOf(\DateTimeImmutable::class, $hook->created_at);
        $this->assertCount(3, $this->seen());
        $this->assertCount(2, $sleeps);
    }

    public function testCreatingAWebhookIsNotRetriedAfter5xx(): void
    {
        [$client] = $this->scripted([[503, [], self::ERR], [201, [], self::HOOK]]);
        try {
            $client->webhooks->create('https://x.test/h', ['*']);
            $this->fail('expected an ApiError');
        } catch (ApiError $e) {
            $this->assertSame([503, 'internal'], [$e->status, $e->errorCode]);
        }
        $this->assertCount(1, $this->seen());
    }

    public function testRecoveringIsNotRetriedAfter5xxFollowingAndCancellingAre(): void
    {
        $replay = ['id' => 7, 'status' => 'running', 'total' => 2, 'queued' => 0, 'finished' => 0, 'per_second' => 10];
        [$client] = $this->scripted([[503, [], self::ERR], [202, [], $replay], [502, [], self::ERR], [200, [], $replay], [500, [], self::ERR], [200, [], ['status' => 'cancelled'] + $replay]]);
        try {
            $client->webhooks->recover(1, '2026-11-30T12:00:00Z', '2026-11-30T13:00:00+01:00');
            $this->fail('expected an ApiError');
        } catch (ApiError $e) {
            $this->assertSame(503, $e->status);
        }
        $this->assertSame([['POST', '/public/v1/webhooks/1/recover', ['since' => '2026-11-30T12:00:00Z', 'until' => '2026-11-30T13:00:00+01:00']]], array_map(fn ($s) => [$s[0], $s[1], $s[3]], $this->seen()));
        // A date goes as UTC; no `until` is sent unless given.
        $client->webhooks->recover(1, new \DateTimeImmutable('2026-11-30T13:00:00+01:00'));
        $this->assertSame(['since' => '2026-11-30T12:00:00.000000Z'], $this->seen()[1][3]);
        $this->assertSame(2, $client->replays->get(7)->total);
        $this->assertSame('cancelled', $client->replays->cancel(7)->status);
        $this->assertSame(['GET /public/v1/replays/7', 'GET /public/v1/replays/7', 'POST /public/v1/replays/7/cancel', 'POST /public/v1/replays/7/cancel'], array_map(fn ($s) => "{$s[0]} {$s[1]}", array_slice($this->seen(), 2)));
    }

    public function testSendingAnEventIsRetriedWithTheSameIdempotencyKey(): void
    {
        [$client] = $this->scripted([[502, [], self::ERR], [202, [], ['id' => 'evt_1', 'deliveries' => 0]]]);
        $this->assertSame('evt_1', $client->events->send('order.paid', [])->id);
        $keys = array_unique(array_map(fn ($s) => array_change_key_case($s[2])['idempotency-key'], $this->seen()));
        $this->assertCount(2, $this->seen());
        $this->assertCount(1, $keys);
    }

    public function testErasingIsRetriedForOneEventButNotForASubject(): void
    {
        $erasure = ['id' => 9, 'status' => 'running', 'subject' => null, 'event_id' => 'evt_1', 'created_at' => '2026-11-30T12:00:00Z', 'finished_at' => null, 'events' => 1, 'attempts' => 2, 'dead_lettered' => 0, 'inspector_copies' => 0];
        // 202: an attempt was still in flight; 204: done.
        [$client] = $this->scripted([[503, [], self::ERR], [202, [], $erasure], [204, [], null], [503, [], self::ERR], [202, [], $erasure]]);
        $running = $client->events->eraseData('evt_1');
        $this->assertInstanceOf(Erasure::class, $running);
        $this->assertSame([9, null], [$running->id, $running->finished_at]);
        $this->assertNull($client->events->eraseData('evt_1'));
        $this->assertSame(array_fill(0, 3, ['DELETE', '/public/v1/events/evt_1/data']), array_map(fn ($s) => [$s[0], $s[1]], $this->seen()));
        try {
            $client->erasures->create('user:42');
            $this->fail('expected a 503');
        } catch (ApiError $e) {
            $this->assertSame(503, $e->status);
        }
        $this->assertCount(4, $this->seen());
    }

    public function testABatchIsRetriedWithTheSameIdempotencyKeys(): void
    {
        $accepted = ['data' => [['id' => 'evt_1', 'deliveries' => 0], ['id' => 'evt_2', 'deliveries' => 1]]];
        [$client] = $this->scripted([[502, [], self::ERR], [202, [], $accepted]]);
        $sent = $client->events->sendBatch([
            ['event' => 'a.b', 'data' => ['n' => 1], 'subjects' => ['user:1']],
            ['event' => 'a.b', 'data' => ['n' => 2], 'id' => 'mine'],
        ]);
        $this->assertSame(['evt_1', 'evt_2'], array_map(fn ($a) => $a->id, $sent));
        [$first, $second] = array_column($this->seen(), 3);
        $this->assertSame($first, $second);
        $this->assertSame('mine', $first['events'][1]['id']);
        $this->assertNotEmpty($first['events'][0]['id']);
        $this->assertSame(['user:1'], $first['events'][0]['subjects']);
    }

    public function testOther4xxAreNeverRetried(): void
    {
        [$client] = $this->scripted([[422, [], ['error' => ['code' => 'invalid', 'message' => 'url: bad']]]]);
        try {
            $client->webhooks->update(1, ['url' => 'nope']);
            $this->fail('expected an ApiError');
        } catch (ApiError $e) {
            $this->assertSame([422, 'invalid', 'url: bad'], [$e->status, $e->errorCode, $e->apiMessage]);
        }
        $this->assertCount(1, $this->seen());
    }

    public function testA429IsRetriedAfterRetryAfterForAnyCall(): void
    {
        $limited = ['error' => ['code' => 'rate_limited', 'message' => 'slow down']];
        [$client, $sleeps] = $this->scripted([[429, ['Retry-After' => '3'], $limited], [201, [], self::HOOK]]);
        $this->assertSame(1, $client->webhooks->create('https://x.test/h', ['*'])->id);
        $this->assertGreaterThanOrEqual(3.0, $sleeps[0]);
    }

    public function testARetryAfterBeyondMaxWaitThrows(): void
    {
        $limited = ['error' => ['code' => 'rate_limited', 'message' => 'slow down']];
        [$client, $sleeps] = $this->scripted([[429, ['Retry-After' => '3600'], $limited]]);
        try {
            $client->events->list();
            $this->fail('expected a RateLimitError');
        } catch (RateLimitError $e) {
            $this->assertSame(3600.0, $e->retryAfter);
        }
        $this->assertCount(0, $sleeps);
    }

    public function testASpentQuotaWaitsForTheResetBeforeTheNextCall(): void
    {
        $spent = ['X-RateLimit-Remaining' => '0', 'X-RateLimit-Reset' => (string) (time() + 20)];
        [$client, $sleeps] = $this->scripted([[200, $spent, self::HOOK], [200, [], self::HOOK]]);
        $client->webhooks->get(1);
        $this->assertCount(0, $sleeps);
        $client->webhooks->get(1);
        $this->assertGreaterThan(18, $sleeps[0]);
        $this->assertLessThanOrEqual(21, $sleeps[0]);
    }

    public function testConnectionErrorsAreRetriedForSafeCallsThenThrown(): void
    {
        $client = new Client('phk_test', 'http://127.0.0.1:' . Env::freePort(), ['maxRetries' => 2]);
        $sleeps = new \ArrayObject();
        $client->transport->sleep = fn (float $s) => $sleeps->append($s);
        try {
            $client->events->get('evt_1');
            $this->fail('expected an ApiConnectionError');
        } catch (ApiConnectionError) {
            $this->assertCount(2, $sleeps);
        }
        $sleeps->exchangeArray([]);
        try {
            $client->deliveries->retry(1);
            $this->fail('expected an ApiConnectionError');
        } catch (ApiConnectionError) {
            $this->assertCount(0, $sleeps);
        }
    }
}
