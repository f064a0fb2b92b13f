<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\InvalidSignatureError;
use Posthorn\InvalidTimestampError;
use Posthorn\MissingHeadersError;
use Posthorn\Webhook;
use Posthorn\WebhookVerificationError;

/** Webhook::verify(): the SPEC.md test vectors, every error, and the standardwebhooks package. */
final class WebhookTest extends TestCase
{
    private const SECRET = 'whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD';
    private const MSG_ID = 'msg_27UH4WbU6Z5A5EzD8u03UvzRbpk';
    private const STAMP = 1649367553;
    private const BODY = '{"email":"test@example.com","username":"test_user"}';
    private const STANDARD = [
        'webhook-id' => self::MSG_ID,
        'webhook-timestamp' => '1649367553',
        'webhook-signature' => 'v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=',
    ];
    private const BOTIX = [
        'X-Botix-Signature' => 'sha256=996637d7f89ef8f7b59f7faaf5341457472e823d8ca666d16b7bbd1dc831721d',
        'X-Botix-Timestamp' => '1649367553',
    ];
    private const PARSED = ['email' => 'test@example.com', 'username' => 'test_user'];

    private function assertRefused(string $class, string $pattern, callable $call): void
    {
        try {
            $call();
            $this->fail("expected {$class}");
        } catch (WebhookVerificationError $e) {
            $this->assertInstanceOf($class, $e);
            $this->assertMatchesRegularExpression($pattern, $e->reason);
        }
    }

    public function testTheStandardWebhooksVectorVerifies(): void
    {
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::STANDARD, self::SECRET, 300, self::STAMP));
    }

    public function testTheBotixVectorVerifies(): void
    {
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::BOTIX, self::SECRET, 300, self::STAMP));
    }

    public function testSignReproducesBothVectors(): void
    {
        $h = Webhook::sign(self::SECRET, self::MSG_ID, self::STAMP, self::BODY);
        $this->assertSame(self::STANDARD['webhook-signature'], $h['webhook-signature']);
        $this->assertSame(self::BOTIX['X-Botix-Signature'], $h['X-Botix-Signature']);
    }

    public function testHeadersAreMatchedCaseInsensitivelyInAnyShape(): void
    {
        $upper = array_change_key_case(self::STANDARD, CASE_UPPER);
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $upper, self::SECRET, 300, self::STAMP));
        $psr7 = array_map(fn ($v) => [$v], self::BOTIX);
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $psr7, self::SECRET, 300, self::STAMP));
        $pairs = array_map(null, array_keys(self::STANDARD), array_values(self::STANDARD));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $pairs, self::SECRET, 300, self::STAMP));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, new \ArrayIterator(self::BOTIX), self::SECRET, 300, self::STAMP));
    }

    public function testAnyOfSeveralSignaturesMayMatchDuringARotation(): void
    {
        $standard = ['webhook-signature' => 'v1,AAAA v1a,xyz ' . self::STANDARD['webhook-signature']] + self::STANDARD;
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $standard, self::SECRET, 300, self::STAMP));
        $botix = ['X-Botix-Signature' => 'sha256=' . str_repeat('00', 32) . ', ' . self::BOTIX['X-Botix-Signature']] + self::BOTIX;
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $botix, self::SECRET, 300, self::STAMP));
    }

    public function testTheTimestampWindowIsFiveMinutesEachWayByDefault(): void
    {
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::STANDARD, self::SECRET, now: self::STAMP + 300));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::STANDARD, self::SECRET, now: self::STAMP - 300));
        $this->assertRefused(InvalidTimestampError::class, '/old/', fn () => Webhook::verify(self::BODY, self::STANDARD, self::SECRET, now: self::STAMP + 301));
        $this->assertRefused(InvalidTimestampError::class, '/future/', fn () => Webhook::verify(self::BODY, self::BOTIX, self::SECRET, now: self::STAMP - 301));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::BOTIX, self::SECRET, 10_000, self::STAMP + 5000));
        $this->assertRefused(InvalidTimestampError::class, '/old/', fn () => Webhook::verify(self::BODY, self::STANDARD, self::SECRET));
    }

    public function testATimestampThatIsNotUnixSecondsIsRefused(): void
    {
        foreach (['soon', '-5', '1649367553.5', str_repeat('9', 40)] as $bad) {
            $headers = ['webhook-timestamp' => $bad] + self::STANDARD;
            $this->assertRefused(InvalidTimestampError::class, '/Unix seconds/', fn () => Webhook::verify(self::BODY, $headers, self::SECRET, 300, self::STAMP));
        }
    }

    public function testATamperedBodyWrongSecretOrGarbledSignatureIsABadSignature(): void
    {
        $cases = [
            [str_replace('test_user', 'evil_user', self::BODY), self::STANDARD, self::SECRET],
            [self::BODY, self::BOTIX, 'whsec_' . base64_encode(str_repeat('k', 32))],
            [self::BODY, ['webhook-signature' => 'v1,not-base64!!'] + self::STANDARD, self::SECRET],
            [self::BODY, ['X-Botix-Signature' => 'md5=abcd'] + self::BOTIX, self::SECRET],
            [self::BODY, ['webhook-id' => 'msg_other'] + self::STANDARD, self::SECRET],
        ];
        foreach ($cases as [$body, $headers, $secret]) {
            $this->assertRefused(InvalidSignatureError::class, '/no signature matches/', fn () => Webhook::verify($body, $headers, $secret, 300, self::STAMP));
        }
    }

    public function testMissingHeadersAreNamed(): void
    {
        $this->assertRefused(MissingHeadersError::class, '/webhook-id/', fn () => Webhook::verify(self::BODY, [], self::SECRET, 300, self::STAMP));
        $partial = self::STANDARD;
        unset($partial['webhook-timestamp']);
        $this->assertRefused(MissingHeadersError::class, '/^missing header webhook-timestamp$/', fn () => Webhook::verify(self::BODY, $partial, self::SECRET, 300, self::STAMP));
        $sigOnly = ['X-Botix-Signature' => self::BOTIX['X-Botix-Signature']];
        $this->assertRefused(MissingHeadersError::class, '/x-botix-timestamp/', fn () => Webhook::verify(self::BODY, $sigOnly, self::SECRET, 300, self::STAMP));
        $blank = ['webhook-signature' => '  '] + self::STANDARD;
        $this->assertRefused(MissingHeadersError::class, '/webhook-signature/', fn () => Webhook::verify(self::BODY, $blank, self::SECRET, 300, self::STAMP));
    }

    public function testEveryErrorIsAWebhookVerificationError(): void
    {
        foreach ([InvalidSignatureError::class, InvalidTimestampError::class, MissingHeadersError::class] as $class) {
            $this->assertTrue(is_subclass_of($class, WebhookVerificationError::class));
        }
    }

    public function testASecretThatIsNotWhsecBase64IsAProgrammingError(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        Webhook::verify(self::BODY, self::STANDARD, 'whsec_???', 300, self::STAMP);
    }

    public function testSignaturesMadeByTheStandardwebhooksPackageVerify(): void
    {
        $cases = json_decode(file_get_contents(Env::get($this, 'POSTHORN_SWH_FIXTURES')), true);
        $this->assertGreaterThanOrEqual(10, count($cases));
        foreach ($cases as $c) {
            $this->assertSame(json_decode($c['body'], true), Webhook::verify($c['body'], $c['headers'], $c['secret'], 300, $c['timestamp']));
        }
        $this->assertNotEmpty(array_filter($cases, fn ($c) => $c['rotation']));
    }
}
