<?php

declare(strict_types=1);

namespace Posthorn\Model;

/** A project's new public API key; `key` is shown this once (stored hashed). */
class CreatedKey extends Model
{
    public int $id;
    public string $name;
    /** the key's first characters, as the dashboard shows it */
    public string $prefix;
    public string $key;
    public \DateTimeImmutable $created_at;
}
