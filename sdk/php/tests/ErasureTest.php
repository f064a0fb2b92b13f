<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\ApiError;
use Posthorn\Client;
use Posthorn\Model\Erasure;

/** Subjects on events, erasure by subject and of one event, against a real `posthorn serve` (started by sdk/test.sh). */
final class ErasureTest extends TestCase
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

    public function testEventsSentWithASubjectAreErasedByIt(): void
    {
        $client = $this->client();
        // Nothing listens there: attempts fail at once and are dead-lettered within a second.
        $hook = $client->webhooks->create('http://127.0.0.1:' . Env::freePort() . '/gone', ['erasure.php']);
        $subject = 'user:php-' . bin2hex(random_bytes(6));
        try {
            $sent = $client->events->send('erasure.php', ['email' => 'ana@example.com'], subjects: [$subject, 'tenant:7']);
            $batch = $client->events->sendBatch([
                ['event' => 'erasure.php', 'data' => ['n' => 1], 'subjects' => [$subject]],
                ['event' => 'erasure.php', 'data' => ['n' => 2]],
            ]);
            $this->assertSame([1, 1], array_map(fn ($a) => $a->deliveries, $batch));
            $event = $client->events->get($sent->id);
            $this->assertSame([['email' => 'ana@example.com'], [$subject, 'tenant:7'], null, null], [$event->data, $event->subjects, $event->erased_at, $event->erasure_id]);
            $this->assertSame([$subject], $client->events->get($batch[0]->id)->subjects);
            $this->assertSame([], $client->events->get($batch[1]->id)->subjects);

            $erasure = $client->erasures->create($subject);
            $this->assertInstanceOf(Erasure::class, $erasure);
            $this->assertSame([$subject, null], [$erasure->subject, $erasure->event_id]);
            $this->assertContains($erasure->status, ['running', 'done']);
            $done = Env::waitFor('the erasure to be done', function () use ($client, $erasure) {
                $e = $client->erasures->get($erasure->id);
                return $e->status === 'done' ? $e : null;
            }, 20);
            $this->assertSame([$erasure->id, 2], [$done->id, $done->events]);
            $this->assertInstanceOf(\DateTimeImmutable::class, $done->finished_at);
            foreach ([$sent->id, $batch[0]->id] as $id) {
                $erased = $client->events->get($id);
                $this->assertSame([null, [], $erasure->id], [$erased->data, $erased->subjects, $erased->erasure_id]);
                $this->assertInstanceOf(\DateTimeImmutable::class, $erased->erased_at);
            }
            $kept = $client->events->get($batch[1]->id);
            $this->assertSame([['n' => 2], null], [$kept->data, $kept->erased_at]);

            // An erased event has nothing left to send again.
            $attempt = $client->deliveries->list(eventId: $sent->id)->data[0];
            $this->refused(409, 'conflict', fn () => $client->deliveries->retry($attempt->id));

            // One event by id: erased within the call; erasing it again answers the same.
            $this->assertNull($client->events->eraseData($batch[1]->id));
            $gone = $client->events->get($batch[1]->id);
            $this->assertNull($gone->data);
            $this->assertNotNull($gone->erasure_id);
            $this->assertNotSame($erasure->id, $gone->erasure_id);
            $this->assertNull($client->events->eraseData($batch[1]->id));
        } finally {
            $client->webhooks->delete($hook->id);
        }
    }

    public function testABatchKeepsItsIdempotencyKeys(): void
    {
        $client = $this->client();
        $items = [['event' => 'erasure.php_batch', 'data' => ['n' => 1], 'id' => 'php-batch-' . bin2hex(random_bytes(6)), 'subjects' => ['user:1']]];
        $first = $client->events->sendBatch($items);
        $this->assertEquals($first, $client->events->sendBatch($items));
    }

    public function testUnknownErasuresAndEventsAndRefusedSubjects(): void
    {
        $client = $this->client();
        $this->refused(404, 'not_found', fn () => $client->erasures->get(1_000_000_000_000));
        $this->refused(404, 'not_found', fn () => $client->events->eraseData('evt_unknown'));
        $this->refused(422, 'invalid', fn () => $client->erasures->create(''));
        $this->refused(422, 'invalid', fn () => $client->events->send('erasure.php', ['n' => 1], subjects: ['']));
        $this->refused(422, 'invalid', fn () => $client->events->send('erasure.php', ['n' => 1], subjects: array_map(fn ($n) => "user:{$n}", range(0, 10))));
    }
}
