<?php
// Sends 60 events with one client and prints the ids and every attempt as JSON; run as a
// child process so two clients can run at once. Usage: php sixty_calls.php URL KEY THRESHOLD
require __DIR__ . '/../autoload.php';

[, $url, $key, $threshold] = $argv;
$log = [];
$client = new Posthorn\Client($key, $url, [
    'rateLimitThreshold' => (int) $threshold,
    'onResponse' => function (Posthorn\Attempt $a) use (&$log): void {
        $log[] = ['sentAt' => $a->sentAt, 'receivedAt' => $a->receivedAt, 'status' => $a->status, 'headers' => $a->headers];
    },
]);
$ids = [];
for ($n = 0; $n < 60; $n++) {
    $ids[] = $client->events->send('rate.test', ['n' => $n])->id;
}
echo json_encode(['ids' => $ids, 'log' => $log]);
