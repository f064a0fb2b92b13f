<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** What is shown of an endpoint's client certificate (its PEM and key never are). */
class ClientCertificate extends Model
{
    /** e.g. `CN=posthorn-client, O=Shop` */
    public string $subject;
    public \DateTimeImmutable $not_after;
}
