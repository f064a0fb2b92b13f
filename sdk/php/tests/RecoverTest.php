<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\ApiError;
use Posthorn\Client;
use Posthorn\Model\Replay;
use Posthorn\Operator;

/**
 * Recovering an endpoint's failures and following the replay, against a real `posthorn
 * serve` (started by sdk/test.sh with a retry schedule of 200 ms steps).
 */
final class RecoverTest extends TestCase
{
    private function client(): Client
    {
        return new Client(Env::get($this, 'POSTHORN_TEST_KEY_BUSINESS'), Env::get($this, 'POSTHORN_TEST_URL'));
    }

    /** The call throws an ApiError of this status and code. */
    private function refused(int $status, string $code, callable $call): void
    {
        try {
            $call();
        } catch (ApiError $e) {
            $this->assertSame([$status, $code], [$e->status, $e->errorCode], $e->getMessage());
            return;
        }
        $this->fail("expected {$status} {$code}");
    }

    /**
     * A receiver under `php -S` answering the status in its `status` file to every delivery
     * and noting "status event_id" lines in `seen.log`; returns [process, directory, port].
     */
    private function startFlakyReceiver(): array
    {
        $dir = sys_get_temp_dir() . '/posthorn-php-flaky-' . bin2hex(random_bytes(6));
        mkdir($dir);
        file_put_contents("{$dir}/status", '500');
        file_put_contents("{$dir}/router.php", <<<'PHP'
            <?php
            $status = (int) file_get_contents(__DIR__ . '/status');
            $event = json_decode(file_get_contents('php://input'), true);
            file_put_contents(__DIR__ . '/seen.log', "{$status} {$event['event_id']}\n", FILE_APPEND | LOCK_EX);
            http_response_code($status);
            PHP);
        $port = Env::freePort();
        $proc = proc_open([PHP_BINARY, '-S', "127.0.0.1:{$port}", 'router.php'], [1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, $dir, ['PATH' => getenv('PATH')]);
        Env::waitFor('the receiver', fn () => @fsockopen('127.0.0.1', $port) !== false, 20);
        return [$proc, $dir, $port];
    }

    /** The event ids the receiver answered with `$status`, sorted. */
    private static function seen(string $dir, int $status): array
    {
        $ids = [];
        foreach (@file("{$dir}/seen.log", FILE_IGNORE_NEW_LINES) ?: [] as $line) {
            [$s, $id] = explode(' ', $line, 2);
            if ((int) $s === $status) {
                $ids[] = $id;
            }
        }
        sort($ids);
        return $ids;
    }

    public function testRecoverReplaysTheDeadLettersOnceAndTheReplayCanBeFollowed(): void
    {
        $client = $this->client();
        [$proc, $dir, $port] = $this->startFlakyReceiver();
        $hook = $client->webhooks->create("http://127.0.0.1:{$port}/hook", ['recover.php']);
        try {
            $sent = [$client->events->send('recover.php', ['n' => 0])->id, $client->events->send('recover.php', ['n' => 1])->id];
            sort($sent);
            // Every automatic attempt fails until the schedule is spent: dead letters.
            foreach ($sent as $id) {
                Env::waitFor("{$id} to be dead-lettered", function () use ($client, $id) {
                    foreach ($client->deliveries->list(eventId: $id)->data as $d) {
                        if ($d->status === 'dead_letter') {
                            return true;
                        }
                    }
                    return false;
                }, 60);
            }
            $this->assertSame($sent, array_values(array_unique(self::seen($dir, 500))));

            file_put_contents("{$dir}/status", '200');
            $since = new \DateTimeImmutable('-5 minutes');
            $replay = $client->webhooks->recover($hook->id, $since);
            $this->assertInstanceOf(Replay::class, $replay);
            $this->assertSame(2, $replay->total);
            $this->assertContains($replay->status, ['running', 'done']);
            $this->assertGreaterThan(0, $replay->per_second);
            $done = Env::waitFor('the replay to finish', function () use ($client, $replay) {
                $r = $client->replays->get($replay->id);
                return $r->status === 'done' && $r->finished === $r->total ? $r : null;
            });
            $this->assertSame([$replay->id, 2, 2, 2], [$done->id, $done->total, $done->queued, $done->finished]);
            Env::waitFor('the receiver to get both again', fn () => count(self::seen($dir, 200)) === 2);
            $this->assertSame($sent, self::seen($dir, 200)); // once each

            // Nothing fails any more: an empty replay (times as text this time), done at once.
            $now = new \DateTimeImmutable();
            $empty = $client->webhooks->recover($hook->id, $since->format(DATE_RFC3339), $now->modify('+1 minute')->format(DATE_RFC3339));
            $this->assertSame([0, 0], [$empty->total, $empty->queued]);
            $this->assertNotSame($replay->id, $empty->id);
            Env::waitFor('the empty replay to be done', fn () => $client->replays->get($empty->id)->status === 'done');
            $cancelled = $client->replays->cancel($empty->id);
            $this->assertSame($empty->id, $cancelled->id);
            $this->assertContains($cancelled->status, ['done', 'cancelled']);
            $this->assertEquals($done, $client->replays->cancel($replay->id)); // a finished replay is left as it was

            // Errors: unknown replay or endpoint, and a window that ends before it starts.
            $this->refused(404, 'not_found', fn () => $client->replays->get(1_000_000_000_000));
            $this->refused(404, 'not_found', fn () => $client->replays->cancel(1_000_000_000_000));
            $this->refused(404, 'not_found', fn () => $client->webhooks->recover(1_000_000_000_000, $since));
            // A window that ends before it starts is empty.
            $empty = $client->webhooks->recover($hook->id, $now, $now->modify('-1 hour'));
            $this->assertSame([0, 'done'], [$empty->total, $empty->status]);
            $this->refused(422, 'invalid', fn () => $client->webhooks->recover($hook->id, 'yesterday'));
        } finally {
            proc_terminate($proc);
            proc_close($proc);
            exec('rm -rf ' . escapeshellarg($dir));
            $client->webhooks->delete($hook->id);
        }
    }

    public function testAnotherProjectsEndpointAndReplayAreNotFound(): void
    {
        $client = $this->client();
        $base = Env::get($this, 'POSTHORN_TEST_URL');
        $op = new Operator(Env::get($this, 'POSTHORN_OPERATOR_KEY'), $base);
        $hook = $client->webhooks->create('https://example.com/recover-php', ['recover.other']);
        $project = $op->projects->create('PHP recover, other project');
        try {
            $since = new \DateTimeImmutable('-1 minute');
            $replay = $client->webhooks->recover($hook->id, $since);
            $other = new Client($op->apiKeys->create($project->id, 'other')->key, $base);
            $this->refused(404, 'not_found', fn () => $other->webhooks->recover($hook->id, $since));
            $this->refused(404, 'not_found', fn () => $other->replays->get($replay->id));
            $this->refused(404, 'not_found', fn () => $other->replays->cancel($replay->id));
            Env::waitFor('the replay to finish', fn () => $client->replays->get($replay->id)->status === 'done');
        } finally {
            $client->webhooks->delete($hook->id);
            $op->projects->delete($project->id);
        }
    }
}
