<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;
use Posthorn\InvalidSignatureError;
use Posthorn\InvalidTimestampError;
use Posthorn\MissingHeadersError;
use Posthorn\Webhook;
use Posthorn\WebhookVerificationError;

/** Webhook::verify() with a whpk_ public key: v1a (ed25519) signatures, and the shared vector. */
final class WebhookEd25519Test extends TestCase
{
    private const MSG_ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
    private const STAMP = 1764950400;
    private const BODY = '{"event":"order.paid","data":{"order":42,"note":"Grüße €"}}';
    private const PARSED = ['event' => 'order.paid', 'data' => ['order' => 42, 'note' => 'Grüße €']];
    // Made once with the Python package's `cryptography`; the Python and TypeScript suites
    // hold the same values, so the three libraries agree on the signed bytes. The seed is the
    // private key: ed25519 signing is deterministic, so each suite can also remake the signature.
    private const VECTOR_SEED = '1G/dyz1Usx6eVnmVuZcCbPefEpAOgWJOdsTQcKAc94Q=';
    private const VECTOR_KEY = 'whpk_x8CAWZvvp73vP3kQ4oVcputXzz2C5C+saNN0AHq/PGU=';
    private const VECTOR_SIGNATURE = 'v1a,UIDhEnf/wmVVw09YYzEjiVY0kvvohzmx7ud3JLBeozSGtIwFUfi55t6ZFFvDVB8KqrJL7M5R1UFFjA3tFzo6AQ==';

    private static function secret(): string
    {
        return 'whsec_' . base64_encode(str_repeat('s', 32));
    }

    private static function whpk(string $keyPair): string
    {
        return 'whpk_' . base64_encode(sodium_crypto_sign_publickey($keyPair));
    }

    private static function v1a(string $keyPair, string $msgId = self::MSG_ID, int $stamp = self::STAMP, string $body = self::BODY): string
    {
        $signature = sodium_crypto_sign_detached("{$msgId}.{$stamp}." . $body, sodium_crypto_sign_secretkey($keyPair));
        return 'v1a,' . base64_encode($signature);
    }

    /** @return array<string, string> */
    private static function headers(string $signature, string $msgId = self::MSG_ID, int $stamp = self::STAMP): array
    {
        return ['webhook-id' => $msgId, 'webhook-timestamp' => (string) $stamp, 'webhook-signature' => $signature];
    }

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

    public function testAV1aSignatureVerifiesWithThePublicKey(): void
    {
        $key = sodium_crypto_sign_keypair();
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::headers(self::v1a($key)), self::whpk($key), 300, self::STAMP));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::headers(self::v1a($key)), self::whpk($key), now: self::STAMP + 300));
    }

    public function testDuringASwitchOfSchemeEachKeyPicksItsOwnEntries(): void
    {
        $key = sodium_crypto_sign_keypair();
        $hmacEntry = Webhook::sign(self::secret(), self::MSG_ID, self::STAMP, self::BODY)['webhook-signature'];
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::headers('v1,AAAA ' . self::v1a($key)), self::whpk($key), 300, self::STAMP));
        $both = self::headers($hmacEntry . ' ' . self::v1a($key));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $both, self::whpk($key), 300, self::STAMP));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $both, self::secret(), 300, self::STAMP));
        // Several v1a entries: any one by the key is enough.
        $several = self::headers(self::v1a(sodium_crypto_sign_keypair()) . ' ' . self::v1a($key));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $several, self::whpk($key), 300, self::STAMP));
    }

    public function testATamperedDeliveryOrAnotherKeysSignatureIsABadSignature(): void
    {
        $key = sodium_crypto_sign_keypair();
        $cases = [
            [str_replace('42', '43', self::BODY), self::headers(self::v1a($key))],
            [self::BODY, self::headers(self::v1a($key), 'msg_other')],
            [self::BODY, self::headers(self::v1a($key, self::MSG_ID, self::STAMP - 1), self::MSG_ID, self::STAMP)],
            [self::BODY, self::headers(self::v1a(sodium_crypto_sign_keypair()))],
            [self::BODY, self::headers('v1a,not-base64!!')],
            [self::BODY, self::headers('v1a,' . base64_encode(str_repeat('x', 32)))],
            // A v1 entry, even a valid-looking one, is never checked against a public key.
            [self::BODY, self::headers('v1,' . substr(self::v1a($key), strlen('v1a,')))],
        ];
        foreach ($cases as [$body, $headers]) {
            $this->assertRefused(InvalidSignatureError::class, '/no signature matches/', fn () => Webhook::verify($body, $headers, self::whpk($key), 300, self::STAMP));
        }
    }

    public function testTheTimestampWindowAppliesAsWithASecret(): void
    {
        $key = sodium_crypto_sign_keypair();
        $headers = self::headers(self::v1a($key));
        $this->assertRefused(InvalidTimestampError::class, '/old/', fn () => Webhook::verify(self::BODY, $headers, self::whpk($key), now: self::STAMP + 301));
        $this->assertRefused(InvalidTimestampError::class, '/future/', fn () => Webhook::verify(self::BODY, $headers, self::whpk($key), now: self::STAMP - 301));
        $this->assertRefused(InvalidTimestampError::class, '/old/', fn () => Webhook::verify(self::BODY, $headers, self::whpk($key)));
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, $headers, self::whpk($key), 10_000, self::STAMP + 5000));
    }

    public function testAWhsecSecretIgnoresV1aEntries(): void
    {
        $headers = self::headers(self::v1a(sodium_crypto_sign_keypair()));
        $this->assertRefused(InvalidSignatureError::class, '/no signature matches/', fn () => Webhook::verify(self::BODY, $headers, self::secret(), 300, self::STAMP));
    }

    public function testAPublicKeyNeedsTheStandardWebhooksHeaders(): void
    {
        $signed = Webhook::sign(self::secret(), self::MSG_ID, self::STAMP, self::BODY);
        $botix = array_intersect_key($signed, ['X-Botix-Signature' => 1, 'X-Botix-Timestamp' => 1]);
        $this->assertRefused(
            MissingHeadersError::class,
            '/^missing header webhook-id, webhook-timestamp, webhook-signature$/',
            fn () => Webhook::verify(self::BODY, $botix, self::whpk(sodium_crypto_sign_keypair()), 300, self::STAMP),
        );
    }

    public function testAKeyThatIsNotWhpkBase64Of32BytesIsAProgrammingError(): void
    {
        foreach (['whpk_', 'whpk_???', 'whpk_' . base64_encode(str_repeat('k', 31)), 'whpk_' . base64_encode(str_repeat('k', 33))] as $bad) {
            try {
                Webhook::verify(self::BODY, self::headers('v1a,AAAA'), $bad, 300, self::STAMP);
                $this->fail("accepted {$bad}");
            } catch (\InvalidArgumentException $e) {
                $this->assertStringContainsString('whpk_', $e->getMessage());
            }
        }
    }

    public function testTheSharedVectorVerifiesAndSigningItAgainGivesTheSameBytes(): void
    {
        $this->assertSame(self::PARSED, Webhook::verify(self::BODY, self::headers(self::VECTOR_SIGNATURE), self::VECTOR_KEY, 300, self::STAMP));
        $key = sodium_crypto_sign_seed_keypair(base64_decode(self::VECTOR_SEED, true));
        $this->assertSame(self::VECTOR_KEY, self::whpk($key));
        $this->assertSame(self::VECTOR_SIGNATURE, self::v1a($key));
    }
}
